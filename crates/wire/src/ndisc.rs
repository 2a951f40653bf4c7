//! Neighbor Discovery messages (RFC 4861 section 4): Router Solicitation
//! and Advertisement, Neighbor Solicitation and Advertisement, and the
//! options they carry (section 4.6).
//!
//! [`NdiscPacket`] views a whole ND message, the ICMPv6 header included
//! (the IPv6 payload); the ICMPv6 type says which fixed fields follow the
//! header. [`options`] walks the options area; it is bounded by the
//! message and stops at the first bad option: an option whose length is
//! zero is an error (section 4.6: "Nodes MUST silently discard an ND
//! packet that contains an option with length zero"), and so is one that
//! runs past the message. [`NdiscRepr::parse`] applies the message checks
//! of sections 6.1.1, 6.1.2, 7.1.1 and 7.1.2 that need nothing but the
//! message and its addresses; the hop limit of 255 is the caller's to
//! check, on the IPv6 header.

use crate::ethernet::EthernetAddress;
use crate::icmpv6::{Icmpv6Message, Icmpv6Packet};
use crate::network_endian::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};
use core::fmt;
use core::net::Ipv6Addr;

/// The hop limit every ND message is sent with, and the only one a
/// receiver accepts (RFC 4861 section 7.1.1): a message with it cannot
/// have come through a router.
pub const HOP_LIMIT: u8 = 255;
/// Length of a Neighbor Solicitation or Advertisement without options.
pub const NEIGHBOR_LEN: usize = 24;
/// Length of a Router Solicitation without options.
pub const ROUTER_SOLICIT_LEN: usize = 8;
/// Length of a Router Advertisement without options.
pub const ROUTER_ADVERT_LEN: usize = 16;
/// Length of a link-layer address option for Ethernet (RFC 2464 section
/// 8): one unit of 8 bytes.
pub const LLADDR_OPTION_LEN: usize = 8;
/// Length of a Prefix Information option.
pub const PREFIX_OPTION_LEN: usize = 32;
/// Length of an MTU option.
pub const MTU_OPTION_LEN: usize = 8;

mod field {
    use crate::Field;
    // Neighbor Solicitation and Advertisement.
    pub const NEIGHBOR_FLAGS: usize = 4;
    pub const TARGET: Field = 8..24;
    // Router Advertisement.
    pub const CUR_HOP_LIMIT: usize = 4;
    pub const ROUTER_FLAGS: usize = 5;
    pub const ROUTER_LIFETIME: Field = 6..8;
    pub const REACHABLE_TIME: Field = 8..12;
    pub const RETRANS_TIME: Field = 12..16;
}

/// The flags of a Neighbor Advertisement (RFC 4861 section 4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NeighborFlags(pub u8);

impl NeighborFlags {
    /// R: the sender is a router.
    pub const ROUTER: NeighborFlags = NeighborFlags(0x80);
    /// S: sent in response to a Neighbor Solicitation.
    pub const SOLICITED: NeighborFlags = NeighborFlags(0x40);
    /// O: the advertisement should override a cached link-layer address.
    pub const OVERRIDE: NeighborFlags = NeighborFlags(0x20);

    /// Whether every flag of `other` is set here.
    #[inline]
    pub const fn contains(self, other: NeighborFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of flags.
    #[inline]
    pub const fn union(self, other: NeighborFlags) -> NeighborFlags {
        NeighborFlags(self.0 | other.0)
    }

    /// R.
    #[inline]
    pub const fn router(self) -> bool {
        self.contains(Self::ROUTER)
    }

    /// S.
    #[inline]
    pub const fn solicited(self) -> bool {
        self.contains(Self::SOLICITED)
    }

    /// O.
    #[inline]
    pub const fn override_(self) -> bool {
        self.contains(Self::OVERRIDE)
    }
}

impl fmt::Display for NeighborFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (flag, c) in [
            (Self::ROUTER, 'R'),
            (Self::SOLICITED, 'S'),
            (Self::OVERRIDE, 'O'),
        ] {
            if self.contains(flag) {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// The flags of a Router Advertisement (RFC 4861 section 4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RouterFlags(pub u8);

impl RouterFlags {
    /// M: addresses are available through DHCPv6.
    pub const MANAGED: RouterFlags = RouterFlags(0x80);
    /// O: other configuration is available through DHCPv6.
    pub const OTHER: RouterFlags = RouterFlags(0x40);
}

/// The length of the fixed part of an ND message of type `t`, or
/// `Unsupported` for a type that is not one of the four handled here
/// (Redirect is not).
fn fixed_len(t: Icmpv6Message) -> Result<usize> {
    match t {
        Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert => Ok(NEIGHBOR_LEN),
        Icmpv6Message::RouterSolicit => Ok(ROUTER_SOLICIT_LEN),
        Icmpv6Message::RouterAdvert => Ok(ROUTER_ADVERT_LEN),
        _ => Err(Error::Unsupported),
    }
}

/// A view of an ND message, ICMPv6 header included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NdiscPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> NdiscPacket<T> {
    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> NdiscPacket<T> {
        NdiscPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<NdiscPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the ICMPv6 header and the fixed fields
    /// of its type: `Unsupported` for a type other than RS, RA, NS or NA,
    /// `Truncated` if it is too short. Afterwards no accessor panics (the
    /// getters of another type's fields read within the 8-byte header or
    /// return zero).
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let data = self.buffer.as_ref();
        let Some(&t) = data.first() else {
            return Err(Error::Truncated);
        };
        let need = fixed_len(Icmpv6Message::from(t))?;
        if data.len() < need {
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

    /// The ICMPv6 view of the same bytes.
    #[inline]
    pub fn icmp(&self) -> Icmpv6Packet<&[u8]> {
        Icmpv6Packet::new_unchecked(self.buffer.as_ref())
    }

    /// The message type.
    #[inline]
    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Message::from(self.buffer.as_ref()[0])
    }

    /// The ICMPv6 code, 0 in every valid ND message.
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[1]
    }

    #[inline]
    fn byte(&self, at: usize) -> u8 {
        self.buffer.as_ref().get(at).copied().unwrap_or(0)
    }

    /// The flags of a Neighbor Advertisement.
    #[inline]
    pub fn neighbor_flags(&self) -> NeighborFlags {
        NeighborFlags(self.byte(field::NEIGHBOR_FLAGS) & 0xe0)
    }

    /// The target address of a Neighbor Solicitation or Advertisement
    /// (unspecified for other types).
    #[inline]
    pub fn target_addr(&self) -> Ipv6Addr {
        match self.buffer.as_ref().get(field::TARGET) {
            Some(b) if self.is_neighbor() => {
                let mut o = [0u8; 16];
                o.copy_from_slice(b);
                Ipv6Addr::from(o)
            }
            _ => Ipv6Addr::UNSPECIFIED,
        }
    }

    #[inline]
    fn is_neighbor(&self) -> bool {
        matches!(
            self.msg_type(),
            Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert
        )
    }

    #[inline]
    fn is_router_advert(&self) -> bool {
        self.msg_type() == Icmpv6Message::RouterAdvert
    }

    /// The Cur Hop Limit a Router Advertisement suggests.
    #[inline]
    pub fn cur_hop_limit(&self) -> u8 {
        if self.is_router_advert() {
            self.byte(field::CUR_HOP_LIMIT)
        } else {
            0
        }
    }

    /// The M and O flags of a Router Advertisement.
    #[inline]
    pub fn router_flags(&self) -> RouterFlags {
        if self.is_router_advert() {
            RouterFlags(self.byte(field::ROUTER_FLAGS) & 0xc0)
        } else {
            RouterFlags(0)
        }
    }

    /// The Router Lifetime of a Router Advertisement, in seconds.
    #[inline]
    pub fn router_lifetime(&self) -> u16 {
        match self.buffer.as_ref().get(field::ROUTER_LIFETIME) {
            Some(b) if self.is_router_advert() => read_u16(b),
            _ => 0,
        }
    }

    /// The Reachable Time of a Router Advertisement, in milliseconds.
    #[inline]
    pub fn reachable_time(&self) -> u32 {
        match self.buffer.as_ref().get(field::REACHABLE_TIME) {
            Some(b) if self.is_router_advert() => read_u32(b),
            _ => 0,
        }
    }

    /// The Retrans Timer of a Router Advertisement, in milliseconds.
    #[inline]
    pub fn retrans_time(&self) -> u32 {
        match self.buffer.as_ref().get(field::RETRANS_TIME) {
            Some(b) if self.is_router_advert() => read_u32(b),
            _ => 0,
        }
    }

    /// The options area: everything after the fixed fields.
    #[inline]
    pub fn options(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        let at = fixed_len(self.msg_type()).unwrap_or(data.len());
        data.get(at..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NdiscPacket<T> {
    /// Sets the flags of a Neighbor Advertisement (the reserved bits are
    /// cleared).
    #[inline]
    pub fn set_neighbor_flags(&mut self, flags: NeighborFlags) {
        let d = self.buffer.as_mut();
        d[field::NEIGHBOR_FLAGS] = flags.0 & 0xe0;
        d[5..8].fill(0);
    }

    /// Sets the target address of a Neighbor Solicitation or Advertisement.
    #[inline]
    pub fn set_target_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::TARGET].copy_from_slice(&addr.octets());
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for NdiscPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

enum_with_unknown! {
    /// ND option type (RFC 4861 section 4.6).
    pub enum NdiscOptionType(u8) {
        /// Source Link-Layer Address.
        SourceLinkLayerAddr = 1,
        /// Target Link-Layer Address.
        TargetLinkLayerAddr = 2,
        /// Prefix Information.
        PrefixInformation = 3,
        /// Redirected Header.
        RedirectedHeader = 4,
        /// MTU.
        Mtu = 5,
    }
}

/// The Prefix Information option (RFC 4861 section 4.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PrefixInfo {
    /// Number of leading bits of `prefix` that are valid, 0..=128.
    pub prefix_len: u8,
    /// L and A flags (0x80 on-link, 0x40 autonomous).
    pub flags: u8,
    /// Valid lifetime, seconds (all ones: infinite).
    pub valid_lifetime: u32,
    /// Preferred lifetime, seconds.
    pub preferred_lifetime: u32,
    /// The prefix.
    pub prefix: Ipv6Addr,
}

impl PrefixInfo {
    /// L: the prefix is on-link.
    pub const ON_LINK: u8 = 0x80;
    /// A: the prefix may be used for address autoconfiguration.
    pub const AUTONOMOUS: u8 = 0x40;
}

/// One ND option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdiscOption<'a> {
    /// The sender's Ethernet address.
    SourceLinkLayerAddr(EthernetAddress),
    /// The target's Ethernet address.
    TargetLinkLayerAddr(EthernetAddress),
    /// An on-link or autoconfiguration prefix.
    PrefixInformation(PrefixInfo),
    /// The link MTU.
    Mtu(u32),
    /// Any other option (Redirected Header included): type and body,
    /// after the two bytes of type and length.
    Unknown {
        /// The option type.
        kind: u8,
        /// The bytes after type and length.
        data: &'a [u8],
    },
}

impl NdiscOption<'_> {
    /// The bytes [`emit`](Self::emit) writes, a multiple of 8.
    pub fn buffer_len(&self) -> usize {
        match self {
            NdiscOption::SourceLinkLayerAddr(_) | NdiscOption::TargetLinkLayerAddr(_) => {
                LLADDR_OPTION_LEN
            }
            NdiscOption::PrefixInformation(_) => PREFIX_OPTION_LEN,
            NdiscOption::Mtu(_) => MTU_OPTION_LEN,
            NdiscOption::Unknown { data, .. } => (data.len() + 2).div_ceil(8) * 8,
        }
    }

    /// Writes the option at the start of `buf`, padding with zeros.
    ///
    /// # Panics
    /// If `buf` is shorter than [`buffer_len`](Self::buffer_len), or an
    /// unknown option is longer than 2038 bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        let len = self.buffer_len();
        let buf = &mut buf[..len];
        buf.fill(0);
        buf[1] = u8::try_from(len / 8).expect("ND option longer than 2040 bytes");
        match *self {
            NdiscOption::SourceLinkLayerAddr(e) => {
                buf[0] = NdiscOptionType::SourceLinkLayerAddr.into();
                buf[2..8].copy_from_slice(&e.0);
            }
            NdiscOption::TargetLinkLayerAddr(e) => {
                buf[0] = NdiscOptionType::TargetLinkLayerAddr.into();
                buf[2..8].copy_from_slice(&e.0);
            }
            NdiscOption::PrefixInformation(p) => {
                buf[0] = NdiscOptionType::PrefixInformation.into();
                buf[2] = p.prefix_len;
                buf[3] = p.flags;
                write_u32(&mut buf[4..8], p.valid_lifetime);
                write_u32(&mut buf[8..12], p.preferred_lifetime);
                buf[16..32].copy_from_slice(&p.prefix.octets());
            }
            NdiscOption::Mtu(mtu) => {
                buf[0] = NdiscOptionType::Mtu.into();
                write_u32(&mut buf[4..8], mtu);
            }
            NdiscOption::Unknown { kind, data } => {
                buf[0] = kind;
                buf[2..2 + data.len()].copy_from_slice(data);
            }
        }
    }
}

/// Walks an options area; see [`options`].
#[derive(Debug, Clone)]
pub struct NdiscOptionsIter<'a> {
    data: &'a [u8],
    at: usize,
    done: bool,
}

/// The options in `data`, an ND message's options area, in order. Each
/// item is an option, or the error that ends the walk: `Malformed` for an
/// option of length zero or a known option of the wrong length (a
/// link-layer address option other than Ethernet's 8 bytes, a prefix
/// option other than 32, an MTU option other than 8), `Truncated` for an
/// option that runs past `data`. The walk yields at most `data.len() / 8
/// + 1` items.
pub fn options(data: &[u8]) -> NdiscOptionsIter<'_> {
    NdiscOptionsIter {
        data,
        at: 0,
        done: false,
    }
}

impl<'a> Iterator for NdiscOptionsIter<'a> {
    type Item = Result<NdiscOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.at >= self.data.len() {
            return None;
        }
        let rest = &self.data[self.at..];
        let fail = |s: &mut Self, e| {
            s.done = true;
            Some(Err(e))
        };
        let Some(&[kind, units]) = rest.first_chunk::<2>() else {
            return fail(self, Error::Truncated);
        };
        if units == 0 {
            return fail(self, Error::Malformed);
        }
        let len = usize::from(units) * 8;
        let Some(opt) = rest.get(..len) else {
            return fail(self, Error::Truncated);
        };
        self.at += len;
        let eth = |o: &[u8]| EthernetAddress([o[2], o[3], o[4], o[5], o[6], o[7]]);
        let item = match NdiscOptionType::from(kind) {
            NdiscOptionType::SourceLinkLayerAddr if len == LLADDR_OPTION_LEN => {
                NdiscOption::SourceLinkLayerAddr(eth(opt))
            }
            NdiscOptionType::TargetLinkLayerAddr if len == LLADDR_OPTION_LEN => {
                NdiscOption::TargetLinkLayerAddr(eth(opt))
            }
            NdiscOptionType::PrefixInformation if len == PREFIX_OPTION_LEN => {
                let mut prefix = [0u8; 16];
                prefix.copy_from_slice(&opt[16..32]);
                if opt[2] > 128 {
                    return fail(self, Error::Malformed);
                }
                NdiscOption::PrefixInformation(PrefixInfo {
                    prefix_len: opt[2],
                    flags: opt[3] & 0xc0,
                    valid_lifetime: read_u32(&opt[4..8]),
                    preferred_lifetime: read_u32(&opt[8..12]),
                    prefix: Ipv6Addr::from(prefix),
                })
            }
            NdiscOptionType::Mtu if len == MTU_OPTION_LEN => NdiscOption::Mtu(read_u32(&opt[4..8])),
            NdiscOptionType::SourceLinkLayerAddr
            | NdiscOptionType::TargetLinkLayerAddr
            | NdiscOptionType::PrefixInformation
            | NdiscOptionType::Mtu => return fail(self, Error::Malformed),
            NdiscOptionType::RedirectedHeader | NdiscOptionType::Unknown(_) => {
                NdiscOption::Unknown {
                    kind,
                    data: &opt[2..],
                }
            }
        };
        Some(Ok(item))
    }
}

/// The options of a message that a router uses: the first of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
struct KnownOptions {
    source: Option<EthernetAddress>,
    target: Option<EthernetAddress>,
    prefix: Option<PrefixInfo>,
    mtu: Option<u32>,
}

fn read_options(data: &[u8]) -> Result<KnownOptions> {
    let mut k = KnownOptions::default();
    for o in options(data) {
        match o? {
            NdiscOption::SourceLinkLayerAddr(e) => {
                k.source.get_or_insert(e);
            }
            NdiscOption::TargetLinkLayerAddr(e) => {
                k.target.get_or_insert(e);
            }
            NdiscOption::PrefixInformation(p) => {
                k.prefix.get_or_insert(p);
            }
            NdiscOption::Mtu(m) => {
                k.mtu.get_or_insert(m);
            }
            NdiscOption::Unknown { .. } => {}
        }
    }
    Ok(k)
}

/// An ND message, as a router reads or writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NdiscRepr {
    /// Router Solicitation (section 4.1).
    RouterSolicit {
        /// The Source Link-Layer Address option.
        lladdr: Option<EthernetAddress>,
    },
    /// Router Advertisement (section 4.2), with the first prefix and MTU
    /// options.
    RouterAdvert {
        /// Suggested hop limit, 0 for unspecified.
        hop_limit: u8,
        /// M and O.
        flags: RouterFlags,
        /// Seconds the sender is a default router, 0 for not one.
        router_lifetime: u16,
        /// Milliseconds, 0 for unspecified.
        reachable_time: u32,
        /// Milliseconds, 0 for unspecified.
        retrans_time: u32,
        /// The Source Link-Layer Address option.
        lladdr: Option<EthernetAddress>,
        /// The MTU option.
        mtu: Option<u32>,
        /// The first Prefix Information option.
        prefix_info: Option<PrefixInfo>,
    },
    /// Neighbor Solicitation (section 4.3).
    NeighborSolicit {
        /// The address asked about.
        target_addr: Ipv6Addr,
        /// The Source Link-Layer Address option.
        lladdr: Option<EthernetAddress>,
    },
    /// Neighbor Advertisement (section 4.4).
    NeighborAdvert {
        /// R, S and O.
        flags: NeighborFlags,
        /// The address advertised.
        target_addr: Ipv6Addr,
        /// The Target Link-Layer Address option.
        lladdr: Option<EthernetAddress>,
    },
}

impl NdiscRepr {
    /// Reads and validates an ND message sent from `src` to `dst`: the
    /// checksum, code 0, the fixed length, every option (none of length
    /// zero, none past the end), a target that is not multicast, and the
    /// rules on unspecified sources and multicast destinations (sections
    /// 6.1.1, 7.1.1, 7.1.2). A bad message is `Malformed` (`Truncated` if
    /// short); a type other than RS, RA, NS or NA is `Unsupported`. The
    /// hop limit is the caller's to check (it is in the IPv6 header).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        src: Ipv6Addr,
        dst: Ipv6Addr,
        packet: &NdiscPacket<&T>,
    ) -> Result<NdiscRepr> {
        packet.check_len()?;
        if !packet.icmp().verify_checksum(src, dst) || packet.msg_code() != 0 {
            return Err(Error::Malformed);
        }
        let o = read_options(packet.options())?;
        let unspecified = src.is_unspecified();
        Ok(match packet.msg_type() {
            Icmpv6Message::RouterSolicit => {
                if unspecified && o.source.is_some() {
                    return Err(Error::Malformed);
                }
                NdiscRepr::RouterSolicit { lladdr: o.source }
            }
            Icmpv6Message::RouterAdvert => {
                // Section 6.1.2: from a link-local address only.
                if !src.is_unicast_link_local() {
                    return Err(Error::Malformed);
                }
                NdiscRepr::RouterAdvert {
                    hop_limit: packet.cur_hop_limit(),
                    flags: packet.router_flags(),
                    router_lifetime: packet.router_lifetime(),
                    reachable_time: packet.reachable_time(),
                    retrans_time: packet.retrans_time(),
                    lladdr: o.source,
                    mtu: o.mtu,
                    prefix_info: o.prefix,
                }
            }
            Icmpv6Message::NeighborSolicit => {
                let target_addr = packet.target_addr();
                // Section 7.1.1: a DAD probe (source ::) goes to a
                // solicited-node address and carries no source address.
                if target_addr.is_multicast()
                    || (unspecified && (!is_solicited_node(dst) || o.source.is_some()))
                {
                    return Err(Error::Malformed);
                }
                NdiscRepr::NeighborSolicit {
                    target_addr,
                    lladdr: o.source,
                }
            }
            Icmpv6Message::NeighborAdvert => {
                let target_addr = packet.target_addr();
                let flags = packet.neighbor_flags();
                // Section 7.1.2: never solicited when multicast.
                if target_addr.is_multicast() || (dst.is_multicast() && flags.solicited()) {
                    return Err(Error::Malformed);
                }
                NdiscRepr::NeighborAdvert {
                    flags,
                    target_addr,
                    lladdr: o.target,
                }
            }
            _ => return Err(Error::Unsupported),
        })
    }

    fn options(&self) -> [Option<NdiscOption<'static>>; 3] {
        match *self {
            NdiscRepr::RouterSolicit { lladdr } | NdiscRepr::NeighborSolicit { lladdr, .. } => {
                [lladdr.map(NdiscOption::SourceLinkLayerAddr), None, None]
            }
            NdiscRepr::NeighborAdvert { lladdr, .. } => {
                [lladdr.map(NdiscOption::TargetLinkLayerAddr), None, None]
            }
            NdiscRepr::RouterAdvert {
                lladdr,
                mtu,
                prefix_info,
                ..
            } => [
                lladdr.map(NdiscOption::SourceLinkLayerAddr),
                mtu.map(NdiscOption::Mtu),
                prefix_info.map(NdiscOption::PrefixInformation),
            ],
        }
    }

    fn msg_type(&self) -> Icmpv6Message {
        match self {
            NdiscRepr::RouterSolicit { .. } => Icmpv6Message::RouterSolicit,
            NdiscRepr::RouterAdvert { .. } => Icmpv6Message::RouterAdvert,
            NdiscRepr::NeighborSolicit { .. } => Icmpv6Message::NeighborSolicit,
            NdiscRepr::NeighborAdvert { .. } => Icmpv6Message::NeighborAdvert,
        }
    }

    /// The bytes [`emit`](Self::emit) writes: ICMPv6 header, fixed fields
    /// and options.
    pub fn buffer_len(&self) -> usize {
        let fixed = fixed_len(self.msg_type()).unwrap_or(0);
        fixed
            + self
                .options()
                .iter()
                .flatten()
                .map(NdiscOption::buffer_len)
                .sum::<usize>()
    }

    /// Writes the message and its checksum for a packet from `src` to
    /// `dst`, in a buffer of exactly [`buffer_len`](Self::buffer_len)
    /// bytes (the checksum covers the whole buffer).
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        packet: &mut NdiscPacket<T>,
    ) {
        let t = self.msg_type();
        let fixed = fixed_len(t).unwrap_or(0);
        {
            let d = packet.buffer.as_mut();
            d[..fixed].fill(0);
            d[0] = t.into();
        }
        match *self {
            NdiscRepr::RouterSolicit { .. } => {}
            NdiscRepr::RouterAdvert {
                hop_limit,
                flags,
                router_lifetime,
                reachable_time,
                retrans_time,
                ..
            } => {
                let d = packet.buffer.as_mut();
                d[field::CUR_HOP_LIMIT] = hop_limit;
                d[field::ROUTER_FLAGS] = flags.0 & 0xc0;
                write_u16(&mut d[field::ROUTER_LIFETIME], router_lifetime);
                write_u32(&mut d[field::REACHABLE_TIME], reachable_time);
                write_u32(&mut d[field::RETRANS_TIME], retrans_time);
            }
            NdiscRepr::NeighborSolicit { target_addr, .. } => packet.set_target_addr(target_addr),
            NdiscRepr::NeighborAdvert {
                flags, target_addr, ..
            } => {
                packet.set_neighbor_flags(flags);
                packet.set_target_addr(target_addr);
            }
        }
        let mut at = fixed;
        for o in self.options().iter().flatten() {
            o.emit(&mut packet.buffer.as_mut()[at..]);
            at += o.buffer_len();
        }
        let end = at;
        let mut icmp = Icmpv6Packet::new_unchecked(&mut packet.buffer.as_mut()[..end]);
        icmp.fill_checksum(src, dst);
    }
}

impl fmt::Display for NdiscRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ll = |f: &mut fmt::Formatter<'_>, what: &str, e: Option<EthernetAddress>| match e {
            Some(e) => write!(f, ", {what} {e}"),
            None => Ok(()),
        };
        match *self {
            NdiscRepr::RouterSolicit { lladdr } => {
                f.write_str("ICMP6 router solicitation")?;
                ll(f, "source link-address", lladdr)
            }
            NdiscRepr::RouterAdvert {
                hop_limit,
                router_lifetime,
                lladdr,
                ..
            } => {
                write!(
                    f,
                    "ICMP6 router advertisement, hop limit {hop_limit}, lifetime {router_lifetime}s"
                )?;
                ll(f, "source link-address", lladdr)
            }
            NdiscRepr::NeighborSolicit {
                target_addr,
                lladdr,
            } => {
                write!(f, "ICMP6 neighbor solicitation, who has {target_addr}")?;
                ll(f, "source link-address", lladdr)
            }
            NdiscRepr::NeighborAdvert {
                flags,
                target_addr,
                lladdr,
            } => {
                write!(
                    f,
                    "ICMP6 neighbor advertisement, tgt is {target_addr}, flags [{flags}]"
                )?;
                ll(f, "target link-address", lladdr)
            }
        }
    }
}

/// The solicited-node multicast address of `addr`, `ff02::1:ffXX:XXXX`
/// with its low 24 bits (RFC 4291 section 2.7.1): where a Neighbor
/// Solicitation for `addr` is sent.
pub const fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let low = addr.to_bits() & 0x00ff_ffff;
    Ipv6Addr::from_bits(0xff02_0000_0000_0000_0000_0001_ff00_0000 | low)
}

/// Whether `addr` is a solicited-node multicast address.
pub const fn is_solicited_node(addr: Ipv6Addr) -> bool {
    addr.to_bits() & !0x00ff_ffff == 0xff02_0000_0000_0000_0000_0001_ff00_0000
}

/// The Ethernet address of IPv6 multicast group `addr`: 33:33 and its low
/// 32 bits (RFC 2464 section 7).
pub const fn multicast_ethernet(addr: Ipv6Addr) -> EthernetAddress {
    let o = addr.octets();
    EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv6::Ipv6Packet;

    const A: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
    const A_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0xaa, 0x00, 0x01]);
    const B_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0xbb, 0x00, 0x02]);

    /// A asks who has 2001:db8::2, as Linux resolves a neighbour: to the
    /// solicited-node group, hop limit 255, a source link-layer address
    /// option (built byte by byte from RFC 4861 section 4.3, checksum
    /// computed independently of this crate). IPv6 header included.
    static NS: [u8; 72] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00, 0xcb, 0x28, 0x00,
        0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x02, 0x01, 0x01, 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01,
    ];

    /// B's solicited answer: S and O set, a target link-layer option.
    static NA: [u8; 72] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x00, 0x39, 0x62, 0x60,
        0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02,
    ];

    /// A router advertisement from fe80::5054:ff:feaa:1 to all nodes: hop
    /// limit 64, lifetime 1800 s, source link-layer, MTU 1500 and prefix
    /// 2001:db8::/64 (L and A) options.
    static RA: [u8; 104] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x40, 0x3a, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x50, 0x54, 0x00, 0xff, 0xfe, 0xaa, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0x00, 0x8a, 0xdc, 0x40,
        0x00, 0x07, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x52, 0x54,
        0x00, 0xaa, 0x00, 0x01, 0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0x05, 0xdc, 0x03, 0x04, 0x40,
        0xc0, 0x00, 0x01, 0x51, 0x80, 0x00, 0x00, 0x38, 0x40, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01,
        0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    fn split(bytes: &[u8]) -> (Ipv6Addr, Ipv6Addr, u8, &[u8]) {
        let ip = Ipv6Packet::new_checked(bytes).unwrap();
        (ip.src_addr(), ip.dst_addr(), ip.hop_limit(), ip.payload())
    }

    #[test]
    fn deconstruct_solicitation() {
        let (src, dst, hlim, msg) = split(&NS);
        assert_eq!(hlim, HOP_LIMIT);
        assert_eq!(dst, solicited_node(B));
        assert!(is_solicited_node(dst) && !is_solicited_node(B));
        assert_eq!(
            multicast_ethernet(dst),
            EthernetAddress([0x33, 0x33, 0xff, 0, 0, 2])
        );
        let p = NdiscPacket::new_checked(msg).unwrap();
        assert_eq!(p.msg_type(), Icmpv6Message::NeighborSolicit);
        assert_eq!(p.target_addr(), B);
        assert_eq!(p.options().len(), 8);
        assert_eq!(
            options(p.options()).collect::<Vec<_>>(),
            [Ok(NdiscOption::SourceLinkLayerAddr(A_MAC))]
        );
        let repr = NdiscRepr::parse(src, dst, &p).unwrap();
        assert_eq!(
            repr,
            NdiscRepr::NeighborSolicit {
                target_addr: B,
                lladdr: Some(A_MAC)
            }
        );
        assert_eq!(
            repr.to_string(),
            "ICMP6 neighbor solicitation, who has 2001:db8::2, source link-address 52:54:00:aa:00:01"
        );
        // Another pseudo-header: the checksum fails.
        assert_eq!(NdiscRepr::parse(src, B, &p), Err(Error::Malformed));
    }

    #[test]
    fn construct_solicitation_and_advertisement() {
        let ns = NdiscRepr::NeighborSolicit {
            target_addr: B,
            lladdr: Some(A_MAC),
        };
        assert_eq!(ns.buffer_len(), 32);
        let mut bytes = [0xa5u8; 32];
        ns.emit(
            A,
            solicited_node(B),
            &mut NdiscPacket::new_unchecked(&mut bytes[..]),
        );
        assert_eq!(&bytes[..], &NS[40..]);

        let na = NdiscRepr::NeighborAdvert {
            flags: NeighborFlags::SOLICITED.union(NeighborFlags::OVERRIDE),
            target_addr: B,
            lladdr: Some(B_MAC),
        };
        let mut bytes = [0xa5u8; 32];
        na.emit(B, A, &mut NdiscPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], &NA[40..]);
        let (src, dst, _, msg) = split(&NA);
        let p = NdiscPacket::new_checked(msg).unwrap();
        assert!(p.neighbor_flags().solicited() && p.neighbor_flags().override_());
        assert!(!p.neighbor_flags().router());
        assert_eq!(NdiscRepr::parse(src, dst, &p), Ok(na));
        assert_eq!(
            na.to_string(),
            "ICMP6 neighbor advertisement, tgt is 2001:db8::2, flags [SO], \
             target link-address 52:54:00:bb:00:02"
        );
    }

    #[test]
    fn router_advertisement_round_trips() {
        let (src, dst, _, msg) = split(&RA);
        let p = NdiscPacket::new_checked(msg).unwrap();
        assert_eq!(p.cur_hop_limit(), 64);
        assert_eq!(p.router_lifetime(), 1800);
        assert_eq!((p.reachable_time(), p.retrans_time()), (0, 0));
        assert_eq!(p.target_addr(), Ipv6Addr::UNSPECIFIED);
        let repr = NdiscRepr::parse(src, dst, &p).unwrap();
        let prefix = PrefixInfo {
            prefix_len: 64,
            flags: PrefixInfo::ON_LINK | PrefixInfo::AUTONOMOUS,
            valid_lifetime: 86400,
            preferred_lifetime: 14400,
            prefix: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        };
        assert_eq!(
            repr,
            NdiscRepr::RouterAdvert {
                hop_limit: 64,
                flags: RouterFlags(0),
                router_lifetime: 1800,
                reachable_time: 0,
                retrans_time: 0,
                lladdr: Some(A_MAC),
                mtu: Some(1500),
                prefix_info: Some(prefix),
            }
        );
        assert_eq!(repr.buffer_len(), 64);
        let mut bytes = [0u8; 64];
        repr.emit(src, dst, &mut NdiscPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], msg);
        // Only from a link-local address.
        assert_eq!(NdiscRepr::parse(A, dst, &p), Err(Error::Malformed));

        let rs = NdiscRepr::RouterSolicit { lladdr: None };
        let mut bytes = [0u8; 8];
        rs.emit(A, dst, &mut NdiscPacket::new_unchecked(&mut bytes[..]));
        let p = NdiscPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(NdiscRepr::parse(A, dst, &p), Ok(rs));
        assert!(p.options().is_empty());
    }

    #[test]
    fn truncated_messages() {
        let msg = &NS[40..];
        for len in 0..NEIGHBOR_LEN {
            assert_eq!(
                NdiscPacket::new_checked(&msg[..len]).err(),
                Some(Error::Truncated),
                "{len}"
            );
        }
        // An option cut short.
        let p = NdiscPacket::new_checked(&msg[..30]).unwrap();
        assert_eq!(
            options(p.options()).collect::<Vec<_>>(),
            [Err(Error::Truncated)]
        );
        // An ICMPv6 type that is not ND.
        assert_eq!(
            NdiscPacket::new_checked(&[128u8, 0, 0, 0, 0, 0, 0, 0][..]).err(),
            Some(Error::Unsupported)
        );
    }

    #[test]
    fn zero_length_option_is_an_error_and_ends_the_walk() {
        let mut bytes = NS;
        bytes[65] = 0;
        let (src, dst, _, msg) = split(&bytes);
        let p = NdiscPacket::new_checked(msg).unwrap();
        assert_eq!(
            options(p.options()).collect::<Vec<_>>(),
            [Err(Error::Malformed)]
        );
        assert_eq!(NdiscRepr::parse(src, dst, &p), Err(Error::Malformed));
        // A zero-length option after a good one.
        let opts = [1u8, 1, 2, 0, 0, 0, 0, 1, 5, 0, 0, 0];
        let v: Vec<_> = options(&opts).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[1], Err(Error::Malformed));
    }

    #[test]
    fn option_lengths_and_unknown_options() {
        // A link-layer option two units long is not Ethernet's.
        let opts = [1u8, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(options(&opts).collect::<Vec<_>>(), [Err(Error::Malformed)]);
        // An unknown option is skipped by its length; then the nonce.
        let opts = [14u8, 1, 1, 2, 3, 4, 5, 6, 2, 1, 1, 2, 3, 4, 5, 6];
        let v: Vec<_> = options(&opts).collect();
        assert_eq!(
            v,
            [
                Ok(NdiscOption::Unknown {
                    kind: 14,
                    data: &opts[2..8]
                }),
                Ok(NdiscOption::TargetLinkLayerAddr(EthernetAddress([
                    1, 2, 3, 4, 5, 6
                ]))),
            ]
        );
        let mut out = [0u8; 8];
        v[0].unwrap().emit(&mut out);
        assert_eq!(out, opts[..8]);
        // A lone trailing byte.
        assert_eq!(options(&[1u8]).collect::<Vec<_>>(), [Err(Error::Truncated)]);
    }

    #[test]
    fn message_rules() {
        let ns = |src, dst, ll| {
            let r = NdiscRepr::NeighborSolicit {
                target_addr: B,
                lladdr: ll,
            };
            let mut b = [0u8; 32];
            let n = r.buffer_len();
            r.emit(src, dst, &mut NdiscPacket::new_unchecked(&mut b[..n]));
            NdiscRepr::parse(src, dst, &NdiscPacket::new_unchecked(&b[..n]))
        };
        let un = Ipv6Addr::UNSPECIFIED;
        // DAD: to the solicited-node group, no source link-layer option.
        assert!(ns(un, solicited_node(B), None).is_ok());
        assert_eq!(
            ns(un, solicited_node(B), Some(A_MAC)),
            Err(Error::Malformed)
        );
        assert_eq!(ns(un, B, None), Err(Error::Malformed));
        // A code other than 0.
        let mut bytes = NS;
        bytes[41] = 1;
        let (src, dst, _, msg) = split(&bytes);
        let mut fixed = msg.to_vec();
        Icmpv6Packet::new_unchecked(&mut fixed[..]).fill_checksum(src, dst);
        let p = NdiscPacket::new_checked(&fixed[..]).unwrap();
        assert_eq!(NdiscRepr::parse(src, dst, &p), Err(Error::Malformed));
        // A solicited advertisement to a group.
        let na = NdiscRepr::NeighborAdvert {
            flags: NeighborFlags::SOLICITED,
            target_addr: B,
            lladdr: None,
        };
        let mut b = [0u8; 24];
        let all = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
        na.emit(B, all, &mut NdiscPacket::new_unchecked(&mut b[..]));
        let p = NdiscPacket::new_checked(&b[..]).unwrap();
        assert_eq!(NdiscRepr::parse(B, all, &p), Err(Error::Malformed));
    }
}
