//! IPv6 extension headers (RFC 8200 section 4): walking the chain from the
//! fixed header to the upper-layer header, and the options of a Hop-by-Hop
//! or Destination Options header.
//!
//! The walk is bounded twice: by the bytes of the packet (every length is
//! checked before it is followed) and by [`MAX_HEADERS`], so a chain that
//! loops through lengths or never ends costs at most that many steps.
//! Policy (what a router does with a routing header of type 0 or an
//! unknown option) is left to the caller; [`walk`] reports what it found
//! and where, so that an ICMPv6 Parameter Problem can point at it.

use crate::network_endian::read_u16;

/// The most extension headers [`walk`] follows. RFC 8200 section 4.1
/// recommends each kind at most once (Destination Options twice), seven
/// in all, but a node must accept any number in any order, and a router
/// should pass on what it does not know (RFC 7045): twice that leaves
/// room for repeats and newer kinds. A longer chain is a packet built to
/// be expensive.
pub const MAX_HEADERS: usize = 16;

/// Hop-by-Hop Options.
pub const HOP_BY_HOP: u8 = 0;
/// Routing.
pub const ROUTING: u8 = 43;
/// Fragment.
pub const FRAGMENT: u8 = 44;
/// Encapsulating Security Payload: what follows is encrypted.
pub const ESP: u8 = 50;
/// Authentication Header.
pub const AH: u8 = 51;
/// No Next Header.
pub const NO_NEXT: u8 = 59;
/// Destination Options.
pub const DEST_OPTS: u8 = 60;
/// Mobility (RFC 6275), HIP (RFC 7401), Shim6 (RFC 5533): extension
/// headers in the common format, counted as such (RFC 7045).
const MOBILITY: u8 = 135;
const HIP: u8 = 139;
const SHIM6: u8 = 140;

/// What [`walk`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chain {
    /// The protocol after the last extension header (TCP, UDP, ICMPv6,
    /// ESP, No Next Header, ...).
    pub upper: u8,
    /// Where that header starts, from the start of the IPv6 header; for a
    /// later fragment (offset not 0) there is no upper-layer header and
    /// this is the end of the Fragment header.
    pub upper_offset: usize,
    /// Where the Next Header field naming `upper` is.
    pub upper_pointer: usize,
    /// Extension headers walked.
    pub headers: u8,
    /// The Hop-by-Hop header's offset and length, if there is one.
    pub hop_by_hop: Option<(usize, usize)>,
    /// The first Routing header: its offset, routing type and segments
    /// left.
    pub routing: Option<(usize, u8, u8)>,
    /// The Fragment header: its offset, the fragment offset (in 8-byte
    /// units) and the More Fragments flag.
    pub fragment: Option<(usize, u16, bool)>,
}

/// Why [`walk`] stopped before an upper-layer header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainError {
    /// A header runs past the end of the packet; the offset of the Next
    /// Header field that named it.
    Truncated(usize),
    /// More than [`MAX_HEADERS`] extension headers.
    TooLong,
    /// A Hop-by-Hop header not right after the fixed header (RFC 8200
    /// section 4.3: Parameter Problem code 1, pointing at the Next Header
    /// field that names it).
    HopByHopNotFirst(usize),
}

/// Walks the extension headers of `packet`, which starts with the 40-byte
/// fixed header (and has been cut to its payload length).
pub fn walk(packet: &[u8]) -> Result<Chain, ChainError> {
    if packet.len() < 40 {
        return Err(ChainError::Truncated(6));
    }
    let mut next = packet[6];
    let mut pointer = 6usize;
    let mut at = 40usize;
    let mut chain = Chain::default();
    loop {
        let len = match next {
            HOP_BY_HOP | ROUTING | DEST_OPTS | MOBILITY | HIP | SHIM6 => {
                let hdr = packet
                    .get(at..at + 2)
                    .ok_or(ChainError::Truncated(pointer))?;
                (usize::from(hdr[1]) + 1) * 8
            }
            FRAGMENT => 8,
            AH => {
                let hdr = packet
                    .get(at..at + 2)
                    .ok_or(ChainError::Truncated(pointer))?;
                (usize::from(hdr[1]) + 2) * 4
            }
            _ => {
                chain.upper = next;
                chain.upper_offset = at;
                chain.upper_pointer = pointer;
                return Ok(chain);
            }
        };
        if usize::from(chain.headers) >= MAX_HEADERS {
            return Err(ChainError::TooLong);
        }
        let hdr = packet
            .get(at..at + len)
            .ok_or(ChainError::Truncated(pointer))?;
        match next {
            HOP_BY_HOP if at != 40 => return Err(ChainError::HopByHopNotFirst(pointer)),
            HOP_BY_HOP => chain.hop_by_hop = Some((at, len)),
            ROUTING if chain.routing.is_none() => chain.routing = Some((at, hdr[2], hdr[3])),
            FRAGMENT => {
                let word = read_u16(&hdr[2..4]);
                let offset = word >> 3;
                chain.fragment = Some((at, offset, word & 1 == 1));
                if offset != 0 {
                    // A later fragment: what follows is the middle of the
                    // original payload, not a header.
                    chain.headers += 1;
                    chain.upper = hdr[0];
                    chain.upper_offset = at + len;
                    chain.upper_pointer = at;
                    return Ok(chain);
                }
            }
            _ => {}
        }
        chain.headers += 1;
        pointer = at;
        next = hdr[0];
        at += len;
    }
}

/// One option of a Hop-by-Hop or Destination Options header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    /// The option type.
    pub kind: u8,
    /// Where the option starts, from the start of the options header.
    pub offset: usize,
    /// Its data length.
    pub len: usize,
}

/// Pad1.
pub const OPT_PAD1: u8 = 0;
/// PadN.
pub const OPT_PADN: u8 = 1;
/// Router Alert (RFC 2711).
pub const OPT_ROUTER_ALERT: u8 = 5;

/// What RFC 8200 section 4.2 says to do with an option of unknown `kind`,
/// from its two high bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownAction {
    /// 00: skip it and go on.
    Skip,
    /// 01: discard the packet.
    Discard,
    /// 10: discard and send Parameter Problem code 2 pointing at it.
    DiscardAndReport,
    /// 11: the same, unless the destination is multicast.
    DiscardAndReportUnicast,
}

impl UnknownAction {
    /// The action for an option type.
    pub fn of(kind: u8) -> UnknownAction {
        match kind >> 6 {
            0 => UnknownAction::Skip,
            1 => UnknownAction::Discard,
            2 => UnknownAction::DiscardAndReport,
            _ => UnknownAction::DiscardAndReportUnicast,
        }
    }
}

/// The options of an options header `hdr` (its Next Header and length bytes
/// included), in order; `Err(offset)` where an option runs past the header.
/// At most one option per byte, so the walk is bounded by the header.
pub fn options(hdr: &[u8]) -> impl Iterator<Item = Result<Opt, usize>> + '_ {
    let mut at = 2usize;
    let mut failed = false;
    core::iter::from_fn(move || {
        if failed || at >= hdr.len() {
            return None;
        }
        let kind = hdr[at];
        if kind == OPT_PAD1 {
            let o = Opt {
                kind,
                offset: at,
                len: 0,
            };
            at += 1;
            return Some(Ok(o));
        }
        let Some(&len) = hdr.get(at + 1) else {
            failed = true;
            return Some(Err(at));
        };
        let len = usize::from(len);
        if at + 2 + len > hdr.len() {
            failed = true;
            return Some(Err(at));
        }
        let o = Opt {
            kind,
            offset: at,
            len,
        };
        at += 2 + len;
        Some(Ok(o))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed header with `next` and a payload of `payload`.
    fn packet(next: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, next, 64];
        p[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn no_extension_headers() {
        let udp = [0u8; 8];
        let c = walk(&packet(17, &udp)).unwrap();
        assert_eq!(
            (c.upper, c.upper_offset, c.upper_pointer, c.headers),
            (17, 40, 6, 0)
        );
    }

    #[test]
    fn hop_by_hop_routing_fragment_then_tcp() {
        let mut p = Vec::new();
        // Hop-by-Hop: next Routing, len 0, Router Alert (5, 2, 0 0), PadN(0).
        p.extend_from_slice(&[ROUTING, 0, 5, 2, 0, 0, 1, 0]);
        // Routing type 2, segments left 1, 8 more bytes... len 0 means 8 bytes.
        p.extend_from_slice(&[FRAGMENT, 0, 2, 1, 0, 0, 0, 0]);
        // Fragment, offset 0, more fragments.
        p.extend_from_slice(&[6, 0, 0, 1, 0, 0, 0, 7]);
        p.extend_from_slice(&[0u8; 20]);
        let c = walk(&packet(HOP_BY_HOP, &p)).unwrap();
        assert_eq!(c.upper, 6);
        assert_eq!(c.upper_offset, 64);
        assert_eq!(c.upper_pointer, 56);
        assert_eq!(c.headers, 3);
        assert_eq!(c.hop_by_hop, Some((40, 8)));
        assert_eq!(c.routing, Some((48, 2, 1)));
        assert_eq!(c.fragment, Some((56, 0, true)));
        let opts: Vec<_> = options(&p[..8]).collect();
        assert_eq!(
            opts,
            [
                Ok(Opt {
                    kind: 5,
                    offset: 2,
                    len: 2
                }),
                Ok(Opt {
                    kind: 1,
                    offset: 6,
                    len: 0
                })
            ]
        );
    }

    #[test]
    fn a_later_fragment_has_no_upper_header() {
        let p = [17, 0, 0x05, 0x00, 0, 0, 0, 9, 1, 2, 3, 4];
        let c = walk(&packet(FRAGMENT, &p)).unwrap();
        assert_eq!((c.upper, c.upper_offset), (17, 48));
        assert_eq!(c.fragment, Some((40, 0xa0, false)));
    }

    #[test]
    fn hostile_chains_stop() {
        // A header running past the packet.
        let p = [6, 4, 0, 0, 0, 0, 0, 0];
        assert_eq!(walk(&packet(DEST_OPTS, &p)), Err(ChainError::Truncated(6)));
        // Hop-by-Hop after another header.
        let p = [HOP_BY_HOP, 0, 1, 4, 0, 0, 0, 0, 6, 0, 1, 4, 0, 0, 0, 0];
        assert_eq!(
            walk(&packet(DEST_OPTS, &p)),
            Err(ChainError::HopByHopNotFirst(40))
        );
        // Destination options naming themselves, forever.
        let p: Vec<u8> = [DEST_OPTS, 0, 1, 4, 0, 0, 0, 0].repeat(20);
        assert_eq!(walk(&packet(DEST_OPTS, &p)), Err(ChainError::TooLong));
        // Shorter than a fixed header.
        assert_eq!(walk(&[0x60; 10]), Err(ChainError::Truncated(6)));
    }

    #[test]
    fn options_past_the_header_and_actions() {
        let hdr = [6, 0, 0, 0xc2, 4, 0, 0, 0];
        let o: Vec<_> = options(&hdr).collect();
        assert_eq!(
            o,
            [
                Ok(Opt {
                    kind: 0,
                    offset: 2,
                    len: 0
                }),
                Err(3)
            ]
        );
        assert_eq!(UnknownAction::of(0x1e), UnknownAction::Skip);
        assert_eq!(UnknownAction::of(0x5e), UnknownAction::Discard);
        assert_eq!(UnknownAction::of(0x9e), UnknownAction::DiscardAndReport);
        assert_eq!(
            UnknownAction::of(0xde),
            UnknownAction::DiscardAndReportUnicast
        );
    }
}
