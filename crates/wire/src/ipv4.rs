//! IPv4 headers (RFC 791 section 3.1), their options, and IPv4 prefixes.
//!
//! What a router checks and rewrites per packet lives here: version, header
//! length, total length, TTL, checksum (RFC 1812 section 5.2.2 lists the
//! checks). [`Ipv4Packet::check_len`] makes every length field safe to use;
//! semantic checks (version, checksum, addresses) are left to the element
//! that decides what to do with a bad packet.
//!
//! Options are walked with [`Ipv4OptionsIter`], which reports a malformed
//! option together with the offset an ICMP Parameter Problem pointer needs
//! (RFC 792; RFC 1812 section 4.3.2.7).

use crate::checksum;
pub use crate::ip::IpProtocol;
use crate::network_endian::{read_u16, read_u32, write_u16};
use crate::{AddressParseError, Error, Result};
use core::fmt;
use core::net::Ipv4Addr;
use core::str::FromStr;

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;
/// Largest header, with 40 bytes of options.
pub const MAX_HEADER_LEN: usize = 60;

mod field {
    use crate::Field;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// A view of an IPv4 packet: header, options and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Length of the header without options.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the length fields against each other and against the buffer:
    ///
    /// - the buffer holds the 20-byte fixed header, else `Truncated`;
    /// - the header length is at least 20, else `Malformed`;
    /// - the total length is at least the header length, else `Malformed`;
    /// - the buffer holds the header length and the total length, else
    ///   `Truncated`.
    ///
    /// Afterwards no accessor panics. Bytes past the total length (Ethernet
    /// padding) are allowed and ignored. The version is not checked here.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(Error::Malformed);
        }
        if len < header_len || len < total_len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version field; 4 for a valid packet.
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// The header length in bytes (IHL times 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point (RFC 2474).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification (RFC 3168).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// The whole second byte, DSCP and ECN (once "type of service").
    #[inline]
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }

    /// The total length field: header and payload, in bytes.
    #[inline]
    pub fn total_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// The identification field.
    #[inline]
    pub fn ident(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::IDENT])
    }

    /// The Don't Fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FLAG_DF != 0
    }

    /// The More Fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & FLAG_MF != 0
    }

    /// The fragment offset in bytes (the field times 8).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & OFFSET_MASK) << 3
    }

    /// True if this packet is a fragment: More Fragments set or a non-zero
    /// offset.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        read_u16(&self.buffer.as_ref()[field::FLG_OFF]) & (FLAG_MF | OFFSET_MASK) != 0
    }

    /// Time to live.
    #[inline]
    #[doc(alias = "ttl")]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Time to live; the same as [`hop_limit`](Self::hop_limit).
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.hop_limit()
    }

    /// The protocol of the payload.
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// The header checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(read_u32(&self.buffer.as_ref()[field::SRC_ADDR]))
    }

    /// The destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(read_u32(&self.buffer.as_ref()[field::DST_ADDR]))
    }

    /// True if the header, options included, sums to the checksum field.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::data(&self.buffer.as_ref()[..self.header_len()]) == !0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv4Packet<&'a T> {
    /// The options: the header after its fixed 20 bytes.
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// An iterator over the options.
    #[inline]
    pub fn options_iter(&self) -> Ipv4OptionsIter<'a> {
        Ipv4OptionsIter::new(self.options())
    }

    /// The payload: from the end of the header to the total length, so that
    /// link-layer padding is not part of it.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the version field.
    #[inline]
    pub fn set_version(&mut self, version: u8) {
        let byte = &mut self.buffer.as_mut()[field::VER_IHL];
        *byte = (*byte & 0x0f) | (version << 4);
    }

    /// Sets the header length in bytes; it must be a multiple of 4 from 20
    /// to 60. Call `check_len` again afterwards.
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        let byte = &mut self.buffer.as_mut()[field::VER_IHL];
        *byte = (*byte & 0xf0) | ((len / 4) as u8 & 0x0f);
    }

    /// Sets the DSCP; bits above the low six are ignored.
    #[inline]
    pub fn set_dscp(&mut self, dscp: u8) {
        let byte = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *byte = (*byte & 0x03) | (dscp << 2);
    }

    /// Sets the ECN field; bits above the low two are ignored.
    #[inline]
    pub fn set_ecn(&mut self, ecn: u8) {
        let byte = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *byte = (*byte & 0xfc) | (ecn & 0x03);
    }

    /// Sets the whole DSCP and ECN byte.
    #[inline]
    pub fn set_dscp_ecn(&mut self, value: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = value;
    }

    /// Sets the total length. Call `check_len` again afterwards.
    #[inline]
    pub fn set_total_len(&mut self, len: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], len);
    }

    /// Sets the identification field.
    #[inline]
    pub fn set_ident(&mut self, ident: u16) {
        write_u16(&mut self.buffer.as_mut()[field::IDENT], ident);
    }

    /// Clears the flags and the fragment offset.
    #[inline]
    pub fn clear_flags(&mut self) {
        write_u16(&mut self.buffer.as_mut()[field::FLG_OFF], 0);
    }

    #[inline]
    fn set_flg_off(&mut self, mask: u16, value: u16) {
        let old = read_u16(&self.buffer.as_ref()[field::FLG_OFF]);
        write_u16(
            &mut self.buffer.as_mut()[field::FLG_OFF],
            (old & !mask) | (value & mask),
        );
    }

    /// Sets the Don't Fragment flag.
    #[inline]
    pub fn set_dont_frag(&mut self, value: bool) {
        self.set_flg_off(FLAG_DF, if value { FLAG_DF } else { 0 });
    }

    /// Sets the More Fragments flag.
    #[inline]
    pub fn set_more_frags(&mut self, value: bool) {
        self.set_flg_off(FLAG_MF, if value { FLAG_MF } else { 0 });
    }

    /// Sets the fragment offset in bytes; it must be a multiple of 8.
    #[inline]
    pub fn set_frag_offset(&mut self, offset: u16) {
        self.set_flg_off(OFFSET_MASK, offset >> 3);
    }

    /// Sets the time to live, leaving the checksum alone.
    #[inline]
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        self.buffer.as_mut()[field::TTL] = hop_limit;
    }

    /// Sets the time to live; the same as [`set_hop_limit`](Self::set_hop_limit).
    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.set_hop_limit(ttl);
    }

    /// Sets the time to live and patches the checksum for the change
    /// (RFC 1624), as a router does for every packet it forwards
    /// (RFC 1812 section 5.3.1) without summing the header again.
    #[inline]
    pub fn set_hop_limit_update_checksum(&mut self, hop_limit: u8) {
        let data = self.buffer.as_ref();
        let old_word = u16::from_be_bytes([data[field::TTL], data[field::PROTOCOL]]);
        let new_word = u16::from_be_bytes([hop_limit, data[field::PROTOCOL]]);
        let sum = checksum::update(self.checksum(), old_word, new_word);
        self.set_hop_limit(hop_limit);
        self.set_checksum(sum);
    }

    /// Sets the protocol of the payload.
    #[inline]
    pub fn set_next_header(&mut self, protocol: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = protocol.0;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.octets());
    }

    /// Computes the header checksum and writes it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let header_len = self.header_len();
        let sum = !checksum::data(&self.buffer.as_ref()[..header_len]);
        self.set_checksum(sum);
    }

    /// The options, mutably.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let header_len = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..header_len]
    }

    /// The payload, up to the total length, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.buffer.as_mut()[range]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv4Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

number_with_names! {
    /// The type octet of an IPv4 option (RFC 791 section 3.1; IANA "IP
    /// Option Numbers"): copied flag, class and number.
    pub struct Ipv4OptionKind(u8), unknown as "option {}" {
        /// End of Option List.
        EOL = 0, "EOL";
        /// No Operation, used as padding between options.
        NOP = 1, "NOP";
        /// Record Route (RFC 791).
        RECORD_ROUTE = 7, "RR";
        /// Internet Timestamp (RFC 791).
        TIMESTAMP = 68, "TS";
        /// Security (RFC 1108).
        SECURITY = 130, "SEC";
        /// Loose Source and Record Route (RFC 791).
        LSRR = 131, "LSRR";
        /// Extended Security (RFC 1108).
        EXTENDED_SECURITY = 133, "E-SEC";
        /// Stream ID (RFC 791, obsolete).
        STREAM_ID = 136, "SID";
        /// Strict Source and Record Route (RFC 791).
        SSRR = 137, "SSRR";
        /// Router Alert (RFC 2113).
        ROUTER_ALERT = 148, "RTRALT";
    }
}

impl Ipv4OptionKind {
    /// True if the option must be copied into every fragment.
    #[inline]
    pub const fn copied(self) -> bool {
        self.0 & 0x80 != 0
    }

    /// The option class: 0 control, 2 debugging and measurement.
    #[inline]
    pub const fn class(self) -> u8 {
        (self.0 >> 5) & 0x03
    }

    /// The option number within its class.
    #[inline]
    pub const fn number(self) -> u8 {
        self.0 & 0x1f
    }
}

/// One IPv4 option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Option<'a> {
    /// The type octet.
    pub kind: Ipv4OptionKind,
    /// The octets after the type and length octets; empty for EOL and NOP.
    pub data: &'a [u8],
}

impl<'a> Ipv4Option<'a> {
    /// The length of the option on the wire.
    #[inline]
    pub fn len(&self) -> usize {
        match self.kind {
            Ipv4OptionKind::EOL | Ipv4OptionKind::NOP => 1,
            _ => self.data.len() + 2,
        }
    }

    /// False: an option is at least its type octet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The pointer octet of Record Route, source routes and Timestamp:
    /// one-based offset, from the type octet, of the next slot to fill.
    #[inline]
    pub fn pointer(&self) -> Option<u8> {
        match self.kind {
            Ipv4OptionKind::RECORD_ROUTE
            | Ipv4OptionKind::LSRR
            | Ipv4OptionKind::SSRR
            | Ipv4OptionKind::TIMESTAMP => self.data.first().copied(),
            _ => None,
        }
    }

    /// The route slots of Record Route and source routes, filled or not.
    pub fn route_addresses(&self) -> impl Iterator<Item = Ipv4Addr> + 'a {
        let slots = match self.kind {
            Ipv4OptionKind::RECORD_ROUTE | Ipv4OptionKind::LSRR | Ipv4OptionKind::SSRR => {
                self.data.get(1..).unwrap_or(&[])
            }
            _ => &[],
        };
        slots
            .chunks_exact(4)
            .map(|a| Ipv4Addr::new(a[0], a[1], a[2], a[3]))
    }

    /// The overflow count and flag nibbles of a Timestamp option.
    #[inline]
    pub fn timestamp_overflow_flag(&self) -> Option<(u8, u8)> {
        match self.kind {
            Ipv4OptionKind::TIMESTAMP => self.data.get(1).map(|b| (b >> 4, b & 0x0f)),
            _ => None,
        }
    }
}

/// A malformed option, and where it went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4OptionError {
    /// Offset of the offending octet from the start of the IPv4 header: the
    /// value for the pointer of an ICMP Parameter Problem (RFC 792).
    pub pointer: u8,
}

impl fmt::Display for Ipv4OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed IPv4 option at header offset {}", self.pointer)
    }
}

impl core::error::Error for Ipv4OptionError {}

impl From<Ipv4OptionError> for Error {
    fn from(_: Ipv4OptionError) -> Error {
        Error::Malformed
    }
}

/// An iterator over IPv4 options, stopping after End of Option List.
///
/// Every option but EOL and NOP must have a length octet of at least 2 that
/// stays within the options area; Record Route, source routes and Timestamp
/// must also have a valid pointer and, for Timestamp, a defined flag (the
/// checks of RFC 791 that Linux's `ip_options_compile` applies). The first
/// violation is yielded as `Err` and ends the iteration.
#[derive(Debug, Clone)]
pub struct Ipv4OptionsIter<'a> {
    options: &'a [u8],
    offset: usize,
    done: bool,
}

impl<'a> Ipv4OptionsIter<'a> {
    /// Iterates over an options area, which starts at byte 20 of the header
    /// (error pointers count from the start of the header).
    #[inline]
    pub fn new(options: &'a [u8]) -> Ipv4OptionsIter<'a> {
        Ipv4OptionsIter {
            options,
            offset: 0,
            done: false,
        }
    }

    #[inline]
    fn fail(
        &mut self,
        offset: usize,
    ) -> Option<core::result::Result<Ipv4Option<'a>, Ipv4OptionError>> {
        self.done = true;
        // Options end at byte 60 of the header, so the pointer fits.
        let pointer = (HEADER_LEN + offset).min(usize::from(u8::MAX)) as u8;
        Some(Err(Ipv4OptionError { pointer }))
    }
}

impl<'a> Iterator for Ipv4OptionsIter<'a> {
    type Item = core::result::Result<Ipv4Option<'a>, Ipv4OptionError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let start = self.offset;
        let kind = Ipv4OptionKind(*self.options.get(start)?);
        match kind {
            Ipv4OptionKind::EOL => {
                self.done = true;
                return Some(Ok(Ipv4Option { kind, data: &[] }));
            }
            Ipv4OptionKind::NOP => {
                self.offset += 1;
                return Some(Ok(Ipv4Option { kind, data: &[] }));
            }
            _ => {}
        }
        let Some(&len) = self.options.get(start + 1) else {
            return self.fail(start);
        };
        let len = usize::from(len);
        if len < 2 || start + len > self.options.len() {
            return self.fail(start + 1);
        }
        let data = &self.options[start + 2..start + len];
        match kind {
            Ipv4OptionKind::RECORD_ROUTE | Ipv4OptionKind::LSRR | Ipv4OptionKind::SSRR => {
                if len < 3 {
                    return self.fail(start + 1);
                }
                let pointer = usize::from(data[0]);
                // The pointer is one-based from the type octet; the first
                // slot is at 4. A pointer inside the option must leave room
                // for a whole address.
                if pointer < 4 || (pointer <= len && pointer + 3 > len) {
                    return self.fail(start + 2);
                }
            }
            Ipv4OptionKind::TIMESTAMP => {
                if len < 4 {
                    return self.fail(start + 1);
                }
                let pointer = usize::from(data[0]);
                if pointer < 5 {
                    return self.fail(start + 2);
                }
                let entry_len = match data[1] & 0x0f {
                    0 => 4,
                    1 | 3 => 8,
                    _ => return self.fail(start + 3),
                };
                if pointer <= len && pointer + entry_len - 1 > len {
                    return self.fail(start + 2);
                }
            }
            _ => {}
        }
        self.offset = start + len;
        Some(Ok(Ipv4Option { kind, data }))
    }
}

impl core::iter::FusedIterator for Ipv4OptionsIter<'_> {}

/// The fields of an IPv4 header without options, enough to build packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload.
    pub next_header: IpProtocol,
    /// Length of the payload in bytes; at most 65515.
    pub payload_len: usize,
    /// Time to live.
    pub hop_limit: u8,
    /// DSCP and ECN byte.
    pub dscp_ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment flag.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// Reads a header. Fails with `Malformed` on a version other than 4 or a
    /// bad checksum, and with `Unsupported` on a fragment, which this
    /// `Repr` cannot describe. Options are skipped, not represented.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        packet.check_len()?;
        if packet.version() != 4 || !packet.verify_checksum() {
            return Err(Error::Malformed);
        }
        if packet.is_fragment() {
            return Err(Error::Unsupported);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            hop_limit: packet.hop_limit(),
            dscp_ecn: packet.dscp_ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes: the 20-byte header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header with its checksum; the payload, which
    /// follows it, is the caller's to write.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        packet.set_version(4);
        packet.set_header_len(HEADER_LEN);
        packet.set_dscp_ecn(self.dscp_ecn);
        packet.set_total_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_ident(self.ident);
        packet.clear_flags();
        packet.set_dont_frag(self.dont_frag);
        packet.set_hop_limit(self.hop_limit);
        packet.set_next_header(self.next_header);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

impl fmt::Display for Ipv4Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv4 {} > {}: {}, ttl {}, id {}, length {}",
            self.src_addr,
            self.dst_addr,
            self.next_header,
            self.hop_limit,
            self.ident,
            HEADER_LEN + self.payload_len
        )
    }
}

/// An IPv4 prefix: an address and a prefix length.
///
/// The address may have bits set past the prefix (an interface address
/// with its subnet, `192.0.2.1/24`); [`network`](Self::network) clears them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv4Cidr {
    address: Ipv4Addr,
    prefix_len: u8,
}

impl Ipv4Cidr {
    /// A prefix from an address and a length.
    ///
    /// # Panics
    /// If `prefix_len` is greater than 32.
    pub const fn new(address: Ipv4Addr, prefix_len: u8) -> Ipv4Cidr {
        assert!(prefix_len <= 32, "IPv4 prefix length above 32");
        Ipv4Cidr {
            address,
            prefix_len,
        }
    }

    /// A prefix from an address and a netmask, if the netmask is contiguous.
    pub fn from_netmask(
        address: Ipv4Addr,
        netmask: Ipv4Addr,
    ) -> core::result::Result<Ipv4Cidr, AddressParseError> {
        let mask = u32::from(netmask);
        let prefix_len = mask.leading_ones();
        if mask.checked_shl(prefix_len).unwrap_or(0) != 0 {
            return Err(AddressParseError::Netmask);
        }
        Ok(Ipv4Cidr {
            address,
            prefix_len: prefix_len as u8,
        })
    }

    /// The address, host bits included.
    #[inline]
    pub const fn address(&self) -> Ipv4Addr {
        self.address
    }

    /// The prefix length, 0..=32.
    #[inline]
    pub const fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    #[inline]
    const fn mask(&self) -> u32 {
        match u32::MAX.checked_shl(32 - self.prefix_len as u32) {
            Some(mask) => mask,
            None => 0,
        }
    }

    /// The netmask, `255.255.255.0` for a /24.
    #[inline]
    pub const fn netmask(&self) -> Ipv4Addr {
        Ipv4Addr::from_bits(self.mask())
    }

    /// The prefix with the host bits cleared.
    #[inline]
    pub const fn network(&self) -> Ipv4Cidr {
        Ipv4Cidr {
            address: Ipv4Addr::from_bits(self.address.to_bits() & self.mask()),
            prefix_len: self.prefix_len,
        }
    }

    /// The directed broadcast address, all host bits set (RFC 919); none for
    /// /31 and /32, which have no broadcast (RFC 3021).
    #[inline]
    pub const fn broadcast(&self) -> Option<Ipv4Addr> {
        if self.prefix_len >= 31 {
            return None;
        }
        Some(Ipv4Addr::from_bits(self.address.to_bits() | !self.mask()))
    }

    /// True if `addr` is within the prefix.
    #[inline]
    pub const fn contains_addr(&self, addr: &Ipv4Addr) -> bool {
        (addr.to_bits() ^ self.address.to_bits()) & self.mask() == 0
    }

    /// True if `other` is within this prefix (equal or more specific).
    #[inline]
    pub const fn contains_subnet(&self, other: &Ipv4Cidr) -> bool {
        self.prefix_len <= other.prefix_len && self.contains_addr(&other.address)
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

impl FromStr for Ipv4Cidr {
    type Err = AddressParseError;

    /// Reads `ADDRESS/LENGTH` (`10.0.0.0/8`) or `ADDRESS/NETMASK`
    /// (`10.0.0.0/255.0.0.0`). As in Click's `IPPrefixArg`, the address
    /// may be abbreviated to its leading bytes when the prefix covers no
    /// more than they give: `18.26/16`, `10/8`, `0/0` (but not `18.26/24`).
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let (addr, suffix) = s.rsplit_once('/').ok_or(AddressParseError::PrefixLen)?;
        let (address, bytes) = parse_abbreviated(addr).ok_or(AddressParseError::Ipv4Address)?;
        let cidr = if suffix.contains('.') {
            let netmask = suffix
                .parse::<Ipv4Addr>()
                .map_err(|_| AddressParseError::Netmask)?;
            Ipv4Cidr::from_netmask(address, netmask)?
        } else {
            Ipv4Cidr {
                address,
                prefix_len: parse_prefix_len(suffix, 32)?,
            }
        };
        if cidr.prefix_len > 8 * bytes {
            // Click: "mask specifies more bits than user bothered to define".
            return Err(AddressParseError::Ipv4Address);
        }
        Ok(cidr)
    }
}

/// Reads an IPv4 address of one to four dotted decimal bytes, the missing
/// ones zero, as the address part of a prefix (Click's
/// `IPAddressArg::basic_parse`): `18.26` is 18.26.0.0. Returns the address
/// and how many bytes were given.
pub fn parse_abbreviated(text: &str) -> Option<(Ipv4Addr, u8)> {
    if let Ok(a) = text.parse::<Ipv4Addr>() {
        return Some((a, 4));
    }
    let mut octets = [0u8; 4];
    let mut n = 0u8;
    for part in text.split('.') {
        if n == 4 || part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        octets[usize::from(n)] = part.parse().ok()?;
        n += 1;
    }
    (n < 4).then_some((Ipv4Addr::from(octets), n))
}

/// Reads a decimal prefix length of at most `max`.
pub(crate) fn parse_prefix_len(text: &str, max: u8) -> core::result::Result<u8, AddressParseError> {
    if text.is_empty() || text.len() > 3 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AddressParseError::PrefixLen);
    }
    match text.parse::<u8>() {
        Ok(len) if len <= max => Ok(len),
        _ => Err(AddressParseError::PrefixLen),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// IPv4 part of an ICMP echo request, `ping -s 24 -p 0a0b0c0d` from
    /// 192.0.2.1 to 192.0.2.2 on Linux (captured with tcpdump).
    pub(crate) static ECHO_REQUEST: [u8; 52] = [
        0x45, 0x00, 0x00, 0x34, 0xec, 0x85, 0x40, 0x00, 0x40, 0x01, 0xca, 0x3f, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0x08, 0x00, 0xda, 0x83, 0x11, 0x07, 0x00, 0x01, 0x3a, 0x57,
        0x02, 0x6b, 0x00, 0x00, 0x00, 0x00, 0x95, 0x81, 0x0e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a,
        0x0b, 0x0c, 0x0d, 0x0a, 0x0b, 0x0c, 0x0d,
    ];

    /// `ping -R`: the echo request leaves with NOP and a Record Route option
    /// holding the sender's address, pointer 8.
    static RECORD_ROUTE_REQUEST: [u8; 76] = [
        0x4f, 0x00, 0x00, 0x4c, 0xec, 0x86, 0x40, 0x00, 0x40, 0x01, 0xd6, 0x15, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0x01, 0x07, 0x27, 0x08, 0xc0, 0x00, 0x02, 0x01, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x08, 0x00, 0xda, 0xe6, 0x11, 0x08, 0x00, 0x01, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
        0x07,
    ];

    /// The reply to it: three addresses recorded, then End of Option List.
    static RECORD_ROUTE_REPLY: [u8; 76] = [
        0x4f, 0x00, 0x00, 0x4c, 0x1f, 0xd7, 0x00, 0x00, 0x40, 0x01, 0xae, 0x69, 0xc0, 0x00, 0x02,
        0x02, 0xc0, 0x00, 0x02, 0x01, 0x07, 0x27, 0x10, 0xc0, 0x00, 0x02, 0x01, 0xc0, 0x00, 0x02,
        0x02, 0xc0, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0xe2, 0xe6, 0x11, 0x08, 0x00, 0x01, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
        0x07,
    ];

    /// `ping -T tsonly`: a Timestamp option with one timestamp, pointer 9.
    static TIMESTAMP_REQUEST: [u8; 76] = [
        0x4f, 0x00, 0x00, 0x4c, 0xec, 0x87, 0x40, 0x00, 0x40, 0x01, 0x28, 0x18, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0x44, 0x28, 0x09, 0x00, 0x00, 0x97, 0x4a, 0x4e, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x08, 0x00, 0xda, 0xe5, 0x11, 0x09, 0x00, 0x01, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
        0x07,
    ];

    /// The last fragment of a 1608-byte echo request: offset 1480, no MF.
    static LAST_FRAGMENT_HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x94, 0xec, 0x88, 0x00, 0xb9, 0x40, 0x01, 0x09, 0x24, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02,
    ];

    fn echo_request_repr() -> Ipv4Repr {
        Ipv4Repr {
            src_addr: Ipv4Addr::new(192, 0, 2, 1),
            dst_addr: Ipv4Addr::new(192, 0, 2, 2),
            next_header: IpProtocol::ICMP,
            payload_len: 32,
            hop_limit: 64,
            dscp_ecn: 0,
            ident: 0xec85,
            dont_frag: true,
        }
    }

    #[test]
    fn deconstruct() {
        let packet = Ipv4Packet::new_checked(&ECHO_REQUEST[..]).unwrap();
        assert_eq!(packet.version(), 4);
        assert_eq!(packet.header_len(), 20);
        assert_eq!(packet.dscp(), 0);
        assert_eq!(packet.ecn(), 0);
        assert_eq!(packet.dscp_ecn(), 0);
        assert_eq!(packet.total_len(), 52);
        assert_eq!(packet.ident(), 0xec85);
        assert!(packet.dont_frag());
        assert!(!packet.more_frags());
        assert_eq!(packet.frag_offset(), 0);
        assert!(!packet.is_fragment());
        assert_eq!(packet.hop_limit(), 64);
        assert_eq!(packet.ttl(), 64);
        assert_eq!(packet.next_header(), IpProtocol::ICMP);
        assert_eq!(packet.checksum(), 0xca3f);
        assert_eq!(packet.src_addr(), Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(packet.dst_addr(), Ipv4Addr::new(192, 0, 2, 2));
        assert!(packet.verify_checksum());
        assert!(packet.options().is_empty());
        assert_eq!(packet.options_iter().count(), 0);
        assert_eq!(packet.payload(), &ECHO_REQUEST[20..]);
        assert_eq!(Ipv4Repr::parse(&packet), Ok(echo_request_repr()));
    }

    #[test]
    fn deconstruct_fragment_and_tos() {
        let packet = Ipv4Packet::new_unchecked(&LAST_FRAGMENT_HEADER[..]);
        assert!(packet.verify_checksum());
        assert_eq!(packet.frag_offset(), 1480);
        assert!(!packet.more_frags() && !packet.dont_frag() && packet.is_fragment());
        assert_eq!(packet.total_len(), 148);
        // Only the header was kept: the buffer is shorter than total_len.
        assert_eq!(packet.check_len(), Err(Error::Truncated));

        let mut header = LAST_FRAGMENT_HEADER;
        let mut packet = Ipv4Packet::new_unchecked(&mut header[..]);
        packet.set_total_len(20);
        packet.set_dscp_ecn(0xc0);
        packet.fill_checksum();
        assert_eq!((packet.dscp(), packet.ecn()), (48, 0));
        assert_eq!(Ipv4Repr::parse(&packet), Err(Error::Unsupported));
        packet.set_frag_offset(0);
        packet.set_more_frags(true);
        packet.fill_checksum();
        assert!(packet.is_fragment());
        assert_eq!(Ipv4Repr::parse(&packet), Err(Error::Unsupported));
    }

    #[test]
    fn construct() {
        let repr = echo_request_repr();
        assert_eq!(repr.buffer_len(), 20);
        let mut bytes = [0xa5u8; 52];
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        repr.emit(&mut packet);
        packet.payload_mut().copy_from_slice(&ECHO_REQUEST[20..]);
        assert_eq!(bytes, ECHO_REQUEST);
        assert_eq!(
            repr.to_string(),
            "IPv4 192.0.2.1 > 192.0.2.2: ICMP, ttl 64, id 60549, length 52"
        );
    }

    #[test]
    fn setters() {
        let mut bytes = ECHO_REQUEST;
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        packet.set_version(6);
        assert_eq!((packet.version(), packet.header_len()), (6, 20));
        packet.set_version(4);
        packet.set_dscp(46);
        packet.set_ecn(3);
        assert_eq!(
            (packet.dscp(), packet.ecn(), packet.dscp_ecn()),
            (46, 3, 0xbb)
        );
        packet.set_ecn(1);
        assert_eq!(packet.dscp(), 46);
        packet.set_dont_frag(false);
        packet.set_more_frags(true);
        packet.set_frag_offset(8 * 0x1fff);
        assert!(!packet.dont_frag() && packet.more_frags());
        assert_eq!(packet.frag_offset(), 65528);
        packet.clear_flags();
        assert!(!packet.is_fragment());
        packet.set_ident(7);
        packet.set_ttl(3);
        packet.set_next_header(IpProtocol::UDP);
        packet.set_src_addr(Ipv4Addr::new(10, 0, 0, 1));
        packet.set_dst_addr(Ipv4Addr::BROADCAST);
        assert!(!packet.verify_checksum());
        packet.fill_checksum();
        assert!(packet.verify_checksum());
        assert_eq!(packet.ident(), 7);
        assert_eq!(packet.hop_limit(), 3);
        assert_eq!(packet.next_header(), IpProtocol::UDP);
        assert_eq!(packet.src_addr(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(packet.dst_addr(), Ipv4Addr::BROADCAST);
        packet.set_checksum(0x1234);
        assert_eq!(packet.checksum(), 0x1234);
    }

    #[test]
    fn hop_limit_incremental_update() {
        let mut bytes = ECHO_REQUEST;
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        for ttl in (0..64).rev() {
            packet.set_hop_limit_update_checksum(ttl);
            assert!(packet.verify_checksum(), "ttl {ttl}");
            let incremental = packet.checksum();
            packet.fill_checksum();
            assert_eq!(incremental, packet.checksum(), "ttl {ttl}");
        }
    }

    #[test]
    fn truncated() {
        for len in 0..ECHO_REQUEST.len() {
            assert_eq!(
                Ipv4Packet::new_checked(&ECHO_REQUEST[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
        for len in 20..RECORD_ROUTE_REQUEST.len() {
            assert_eq!(
                Ipv4Packet::new_checked(&RECORD_ROUTE_REQUEST[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
        // Header length 60 in a 40-byte buffer whose total length says 40.
        let mut bytes = [0u8; 40];
        bytes[..20].copy_from_slice(&RECORD_ROUTE_REQUEST[..20]);
        bytes[3] = 40;
        assert_eq!(Ipv4Packet::new_checked(&bytes[..]), Err(Error::Malformed));
        bytes[3] = 60;
        assert_eq!(Ipv4Packet::new_checked(&bytes[..]), Err(Error::Truncated));
    }

    #[test]
    fn overlong() {
        // Ethernet padding: six bytes past total_len are not payload.
        let mut bytes = [0u8; 58];
        bytes[..52].copy_from_slice(&ECHO_REQUEST);
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.payload(), &ECHO_REQUEST[20..]);
        assert_eq!(Ipv4Repr::parse(&packet).unwrap().payload_len, 32);
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        assert_eq!(packet.payload_mut().len(), 32);
    }

    #[test]
    fn bad_header_len() {
        for ihl in 0..5u8 {
            let mut bytes = ECHO_REQUEST;
            bytes[0] = 0x40 | ihl;
            assert_eq!(
                Ipv4Packet::new_checked(&bytes[..]),
                Err(Error::Malformed),
                "ihl {ihl}"
            );
        }
        // Total length shorter than the header.
        let mut bytes = ECHO_REQUEST;
        bytes[3] = 19;
        assert_eq!(Ipv4Packet::new_checked(&bytes[..]), Err(Error::Malformed));
        // Header length past the total length.
        let mut bytes = RECORD_ROUTE_REQUEST;
        bytes[3] = 56;
        assert_eq!(Ipv4Packet::new_checked(&bytes[..]), Err(Error::Malformed));
    }

    #[test]
    fn bad_version_or_checksum() {
        let mut bytes = ECHO_REQUEST;
        bytes[0] = 0x65;
        let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
        packet.fill_checksum();
        assert_eq!(Ipv4Repr::parse(&packet), Err(Error::Malformed));

        let mut bytes = ECHO_REQUEST;
        bytes[11] ^= 1;
        let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert!(!packet.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&packet), Err(Error::Malformed));
    }

    #[test]
    fn record_route_options() {
        let packet = Ipv4Packet::new_checked(&RECORD_ROUTE_REQUEST[..]).unwrap();
        assert!(packet.verify_checksum());
        assert_eq!(packet.header_len(), 60);
        assert_eq!(packet.options().len(), 40);
        assert_eq!(packet.payload().len(), 16);
        assert_eq!(packet.payload()[0], 8);
        let options: Vec<_> = packet
            .options_iter()
            .collect::<core::result::Result<_, _>>()
            .unwrap();
        assert_eq!(options.len(), 2);
        assert_eq!(
            options[0],
            Ipv4Option {
                kind: Ipv4OptionKind::NOP,
                data: &[]
            }
        );
        assert_eq!(options[0].len(), 1);
        let rr = options[1];
        assert_eq!(rr.kind, Ipv4OptionKind::RECORD_ROUTE);
        assert!(!rr.kind.copied());
        assert_eq!((rr.kind.class(), rr.kind.number()), (0, 7));
        assert_eq!(rr.len(), 39);
        assert_eq!(rr.pointer(), Some(8));
        let route: Vec<_> = rr.route_addresses().collect();
        assert_eq!(route.len(), 9);
        assert_eq!(route[0], Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(route[1], Ipv4Addr::UNSPECIFIED);

        let packet = Ipv4Packet::new_checked(&RECORD_ROUTE_REPLY[..]).unwrap();
        assert!(packet.verify_checksum());
        let options: Vec<_> = packet.options_iter().map(|o| o.unwrap()).collect();
        assert_eq!(options.len(), 2);
        assert_eq!(options[0].pointer(), Some(16));
        let route: Vec<_> = options[0].route_addresses().take(3).collect();
        assert_eq!(
            route,
            [
                Ipv4Addr::new(192, 0, 2, 1),
                Ipv4Addr::new(192, 0, 2, 2),
                Ipv4Addr::new(192, 0, 2, 2)
            ]
        );
        assert_eq!(options[1].kind, Ipv4OptionKind::EOL);
        assert_eq!(options[1].pointer(), None);
    }

    #[test]
    fn timestamp_option() {
        let packet = Ipv4Packet::new_checked(&TIMESTAMP_REQUEST[..]).unwrap();
        assert!(packet.verify_checksum());
        let options: Vec<_> = packet.options_iter().map(|o| o.unwrap()).collect();
        assert_eq!(options.len(), 1);
        let ts = options[0];
        assert_eq!(ts.kind, Ipv4OptionKind::TIMESTAMP);
        assert_eq!(ts.kind.class(), 2);
        assert_eq!(ts.len(), 40);
        assert_eq!(ts.pointer(), Some(9));
        assert_eq!(ts.timestamp_overflow_flag(), Some((0, 0)));
        assert_eq!(&ts.data[2..6], &[0x00, 0x97, 0x4a, 0x4e]);
        assert_eq!(ts.route_addresses().count(), 0);
    }

    fn first_error(options: &[u8]) -> Option<u8> {
        Ipv4OptionsIter::new(options)
            .find_map(|o| o.err())
            .map(|e| e.pointer)
    }

    #[test]
    fn malformed_options() {
        let mut rr = [0u8; 40];
        rr[..40].copy_from_slice(&RECORD_ROUTE_REQUEST[20..60]);
        // Length past the end of the options: pointer at the length octet.
        rr[2] = 40;
        assert_eq!(first_error(&rr), Some(22));
        // Length below 2.
        rr[2] = 1;
        assert_eq!(first_error(&rr), Some(22));
        // RR too short for its pointer.
        rr[2] = 2;
        assert_eq!(first_error(&rr), Some(22));
        // RR pointer before the first slot.
        rr[2] = 39;
        rr[3] = 3;
        assert_eq!(first_error(&rr), Some(23));
        // RR pointer inside the option without room for an address.
        rr[3] = 38;
        assert_eq!(first_error(&rr), Some(23));
        // Pointer past the end means "full", which is fine.
        rr[3] = 40;
        assert_eq!(first_error(&rr), None);
        // A type octet with no room for its length.
        assert_eq!(first_error(&[0x01, 0x01, 0x01, 0x94]), Some(23));
        // An unknown option is skipped by its length.
        assert_eq!(first_error(&[0x99, 0x03, 0x00, 0x01]), None);

        let mut ts = [0u8; 40];
        ts.copy_from_slice(&TIMESTAMP_REQUEST[20..60]);
        ts[3] = 0x02;
        assert_eq!(first_error(&ts), Some(23));
        ts[3] = 0x01;
        ts[2] = 37;
        assert_eq!(first_error(&ts), Some(22));
        ts[2] = 4;
        assert_eq!(first_error(&ts), Some(22));
        ts[2] = 41;
        assert_eq!(first_error(&ts), None);
        ts[1] = 3;
        assert_eq!(first_error(&ts), Some(21));

        // The iterator stops after an error.
        let mut iter = Ipv4OptionsIter::new(&[0x07, 0x00, 0x01]);
        assert!(iter.next().unwrap().is_err());
        assert!(iter.next().is_none());
        assert_eq!(
            Error::from(Ipv4OptionError { pointer: 21 }),
            Error::Malformed
        );
    }

    #[test]
    fn options_on_a_real_header_parse_without_error() {
        for bytes in [
            &RECORD_ROUTE_REQUEST,
            &RECORD_ROUTE_REPLY,
            &TIMESTAMP_REQUEST,
        ] {
            let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
            assert!(packet.options_iter().all(|o| o.is_ok()));
            assert!(Ipv4Repr::parse(&packet).is_ok());
        }
    }

    #[test]
    fn cidr() {
        let cidr: Ipv4Cidr = "10.0.0.0/8".parse().unwrap();
        assert_eq!(cidr, Ipv4Cidr::new(Ipv4Addr::new(10, 0, 0, 0), 8));
        assert_eq!("10.0.0.0/255.0.0.0".parse(), Ok(cidr));
        assert_eq!(cidr.netmask(), Ipv4Addr::new(255, 0, 0, 0));
        assert_eq!(cidr.broadcast(), Some(Ipv4Addr::new(10, 255, 255, 255)));
        assert!(cidr.contains_addr(&Ipv4Addr::new(10, 200, 3, 4)));
        assert!(!cidr.contains_addr(&Ipv4Addr::new(11, 0, 0, 0)));
        assert_eq!(cidr.to_string(), "10.0.0.0/8");

        let host: Ipv4Cidr = "192.0.2.77/24".parse().unwrap();
        assert_eq!(host.address(), Ipv4Addr::new(192, 0, 2, 77));
        assert_eq!(host.prefix_len(), 24);
        assert_eq!(host.network().to_string(), "192.0.2.0/24");
        assert!(host.contains_addr(&Ipv4Addr::new(192, 0, 2, 1)));
        assert!(Ipv4Cidr::new(Ipv4Addr::new(192, 0, 0, 0), 16).contains_subnet(&host));
        assert!(!host.contains_subnet(&Ipv4Cidr::new(Ipv4Addr::new(192, 0, 0, 0), 16)));

        let all: Ipv4Cidr = "0.0.0.0/0".parse().unwrap();
        assert_eq!(all.netmask(), Ipv4Addr::UNSPECIFIED);
        assert!(all.contains_addr(&Ipv4Addr::new(203, 0, 113, 1)));
        let one: Ipv4Cidr = "203.0.113.1/32".parse().unwrap();
        assert_eq!(one.netmask(), Ipv4Addr::BROADCAST);
        assert_eq!(one.broadcast(), None);
        assert!(!one.contains_addr(&Ipv4Addr::new(203, 0, 113, 2)));
        assert_eq!("203.0.113.1/255.255.255.255".parse(), Ok(one));
        assert_eq!("0.0.0.0/0.0.0.0".parse(), Ok(all));

        assert_eq!(
            "10.0.0.0".parse::<Ipv4Cidr>(),
            Err(AddressParseError::PrefixLen)
        );
        assert_eq!(
            "10.0.0.0/33".parse::<Ipv4Cidr>(),
            Err(AddressParseError::PrefixLen)
        );
        assert_eq!(
            "10.0.0.0/".parse::<Ipv4Cidr>(),
            Err(AddressParseError::PrefixLen)
        );
        assert_eq!(
            "10.0.0.0/+8".parse::<Ipv4Cidr>(),
            Err(AddressParseError::PrefixLen)
        );
        assert_eq!(
            "10.0.0/25".parse::<Ipv4Cidr>(),
            Err(AddressParseError::Ipv4Address)
        );
        assert_eq!(
            "10.0.0.0/255.0.255.0".parse::<Ipv4Cidr>(),
            Err(AddressParseError::Netmask)
        );
        assert_eq!(
            "10.0.0.0/255.0.0".parse::<Ipv4Cidr>(),
            Err(AddressParseError::Netmask)
        );
    }

    #[test]
    #[should_panic]
    fn cidr_new_rejects_long_prefix() {
        let _ = Ipv4Cidr::new(Ipv4Addr::UNSPECIFIED, 33);
    }

    #[test]
    fn abbreviated_prefixes_as_click_reads_them() {
        let p = |t: &str| t.parse::<Ipv4Cidr>();
        assert_eq!(p("18.26/16").unwrap().to_string(), "18.26.0.0/16");
        assert_eq!(p("10/8").unwrap().to_string(), "10.0.0.0/8");
        assert_eq!(p("0/0").unwrap().to_string(), "0.0.0.0/0");
        assert_eq!(p("18.26.4/24").unwrap().to_string(), "18.26.4.0/24");
        assert_eq!(p("10/255.0.0.0").unwrap().to_string(), "10.0.0.0/8");
        // More bits than the bytes given, bad bytes, empty parts.
        for bad in [
            "18.26/24",
            "10/9",
            "256/8",
            "10./8",
            ".10/8",
            "1.2.3.4.5/8",
            "/8",
            "a/8",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_abbreviated("1.2.3.4"),
            Some((Ipv4Addr::new(1, 2, 3, 4), 4))
        );
        assert_eq!(parse_abbreviated("1"), Some((Ipv4Addr::new(1, 0, 0, 0), 1)));
        assert_eq!(parse_abbreviated(""), None);
    }
}
