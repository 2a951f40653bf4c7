//! The source-route header of route selection "look" (Hardekopf et al.
//! §3.2): the sender writes the whole path into the packet, and each
//! router reads its hop instead of looking the destination up.
//!
//! # Format
//!
//! A shim between the Ethernet header and the payload, announced by its
//! own EtherType, so that routers that do not take part never parse it
//! as IP, and consuming a hop is a one-byte write (no bytes move):
//!
//! ```text
//! dst MAC (6)  src MAC (6)  EtherType 0x88B5 (2)  shim (6 + 6 N)  payload
//!
//! shim:
//!  0: version (2)          1: N, hops (1 to 16)
//!  2: next hop index (0 to N; N: exhausted)   3: reserved (0)
//!  4..6: the payload's EtherType (0x0800 for IPv4)
//!  6 + 6 i .. 6 + 6 i + 4: hop i's next-hop IPv4 address
//!  6 + 6 i + 4 .. 6 + 6 (i + 1): hop i's output port (big-endian)
//! ```
//!
//! Why a shim and not IPv4's loose source route option (RFC 791 §3.1):
//! the option rewrites the destination address at every hop, changes
//! the IP header length and checksum, and is filtered by most networks;
//! the shim is fixed-size per hop, needs no checksum, and carries an
//! output port as well as a next hop. EtherType 0x88B5 is IEEE 802's
//! "local experimental 1"; bricks' cluster label uses it too, with
//! version 1, so the version byte tells the two apart (and the elements
//! take another EtherType with `ETHERTYPE`).
//!
//! [`SourceRoute`] is a checked view of the shim (no accessor panics once
//! [`SourceRoute::check_len`] passed), [`SourceRouteRepr`] builds one.

use std::net::Ipv4Addr;

/// The default EtherType of the shim (IEEE 802 local experimental 1).
pub const ETHERTYPE: u16 = 0x88b5;
/// The version this module reads and writes.
pub const VERSION: u8 = 2;
/// The most hops a route holds.
pub const MAX_HOPS: usize = 16;
/// Bytes before the first hop.
pub const HEADER_LEN: usize = 6;
/// Bytes per hop.
pub const HOP_LEN: usize = 6;

mod field {
    pub const VERSION: usize = 0;
    pub const COUNT: usize = 1;
    pub const INDEX: usize = 2;
    pub const RESERVED: usize = 3;
    pub const ETHERTYPE: core::ops::Range<usize> = 4..6;
}

/// Why bytes are not a source route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer ends before the header or before its last hop.
    Truncated,
    /// Another version.
    Version,
    /// No hops, more than [`MAX_HOPS`], or an index beyond the hops.
    Malformed,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Error::Truncated => "source route truncated",
            Error::Version => "source route of another version",
            Error::Malformed => "malformed source route",
        })
    }
}

impl std::error::Error for Error {}

/// One hop: where the router that consumes it sends the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// The next hop's address (for ARP).
    pub next_hop: Ipv4Addr,
    /// The router's output port.
    pub output: u16,
}

/// A view of a source-route shim (starting at its version byte).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRoute<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SourceRoute<T> {
    /// Wraps a buffer without checking it; see [`Self::check_len`].
    pub const fn new_unchecked(buffer: T) -> SourceRoute<T> {
        SourceRoute { buffer }
    }

    /// Wraps a buffer after [`Self::check_len`].
    #[inline(always)]
    pub fn new_checked(buffer: T) -> Result<SourceRoute<T>, Error> {
        let s = SourceRoute::new_unchecked(buffer);
        s.check_len()?;
        Ok(s)
    }

    /// Checks the version, the hop count (1 to [`MAX_HOPS`]), the index
    /// (at most the count) and that the buffer holds every hop.
    /// Afterwards no accessor panics.
    pub fn check_len(&self) -> Result<(), Error> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if b[field::VERSION] != VERSION {
            return Err(Error::Version);
        }
        let n = usize::from(b[field::COUNT]);
        if n == 0 || n > MAX_HOPS || usize::from(b[field::INDEX]) > n {
            return Err(Error::Malformed);
        }
        if b.len() < HEADER_LEN + n * HOP_LEN {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// The number of hops.
    pub fn count(&self) -> u8 {
        self.buffer.as_ref()[field::COUNT]
    }

    /// The index of the next hop to consume (`count` once exhausted).
    pub fn index(&self) -> u8 {
        self.buffer.as_ref()[field::INDEX]
    }

    /// The payload's EtherType.
    pub fn ethertype(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The shim's length in bytes.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + usize::from(self.count()) * HOP_LEN
    }

    /// Hop `i` (`None` beyond the hops).
    pub fn hop(&self, i: u8) -> Option<Hop> {
        if i >= self.count() {
            return None;
        }
        let at = HEADER_LEN + usize::from(i) * HOP_LEN;
        let h = self.buffer.as_ref().get(at..at + HOP_LEN)?;
        Some(Hop {
            next_hop: Ipv4Addr::new(h[0], h[1], h[2], h[3]),
            output: u16::from_be_bytes([h[4], h[5]]),
        })
    }

    /// The hop to consume now, `None` when the route is exhausted.
    pub fn current(&self) -> Option<Hop> {
        self.hop(self.index())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SourceRoute<T> {
    /// Sets the index of the next hop.
    pub fn set_index(&mut self, i: u8) {
        self.buffer.as_mut()[field::INDEX] = i;
    }

    /// Consumes the current hop: returns it and moves the index on.
    #[inline(always)]
    pub fn consume(&mut self) -> Option<Hop> {
        let h = self.current()?;
        let i = self.index();
        self.set_index(i + 1);
        Some(h)
    }
}

/// A source route to build or parse whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRouteRepr {
    /// The hops, first first.
    pub hops: Vec<Hop>,
    /// The next hop to consume.
    pub index: u8,
    /// The payload's EtherType.
    pub ethertype: u16,
}

impl SourceRouteRepr {
    /// Reads a checked shim.
    pub fn parse<T: AsRef<[u8]>>(s: &SourceRoute<T>) -> Result<SourceRouteRepr, Error> {
        s.check_len()?;
        Ok(SourceRouteRepr {
            hops: (0..s.count()).filter_map(|i| s.hop(i)).collect(),
            index: s.index(),
            ethertype: s.ethertype(),
        })
    }

    /// The shim's length.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.hops.len() * HOP_LEN
    }

    /// Writes the shim into `buf`, which must hold [`Self::buffer_len`]
    /// bytes; `Malformed` for no hops or more than [`MAX_HOPS`].
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), Error> {
        if self.hops.is_empty() || self.hops.len() > MAX_HOPS {
            return Err(Error::Malformed);
        }
        if usize::from(self.index) > self.hops.len() {
            return Err(Error::Malformed);
        }
        let b = buf.get_mut(..self.buffer_len()).ok_or(Error::Truncated)?;
        b[field::VERSION] = VERSION;
        b[field::COUNT] = self.hops.len() as u8;
        b[field::INDEX] = self.index;
        b[field::RESERVED] = 0;
        b[field::ETHERTYPE].copy_from_slice(&self.ethertype.to_be_bytes());
        for (i, h) in self.hops.iter().enumerate() {
            let at = HEADER_LEN + i * HOP_LEN;
            b[at..at + 4].copy_from_slice(&h.next_hop.octets());
            b[at + 4..at + 6].copy_from_slice(&h.output.to_be_bytes());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hops (10.0.1.1 out of 1, then 10.0.2.1 out of 3), the first
    /// consumed, over IPv4.
    static TWO_HOPS: [u8; 18] = [
        0x02, 0x02, 0x01, 0x00, 0x08, 0x00, //
        0x0a, 0x00, 0x01, 0x01, 0x00, 0x01, //
        0x0a, 0x00, 0x02, 0x01, 0x00, 0x03,
    ];

    fn repr() -> SourceRouteRepr {
        SourceRouteRepr {
            hops: vec![
                Hop {
                    next_hop: Ipv4Addr::new(10, 0, 1, 1),
                    output: 1,
                },
                Hop {
                    next_hop: Ipv4Addr::new(10, 0, 2, 1),
                    output: 3,
                },
            ],
            index: 1,
            ethertype: 0x0800,
        }
    }

    #[test]
    fn deconstruct() {
        let s = SourceRoute::new_checked(&TWO_HOPS[..]).unwrap();
        assert_eq!(s.count(), 2);
        assert_eq!(s.index(), 1);
        assert_eq!(s.ethertype(), 0x0800);
        assert_eq!(s.header_len(), 18);
        assert_eq!(s.current(), Some(repr().hops[1]));
        assert_eq!(s.hop(0), Some(repr().hops[0]));
        assert_eq!(s.hop(2), None);
        assert_eq!(SourceRouteRepr::parse(&s).unwrap(), repr());
    }

    #[test]
    fn construct() {
        let r = repr();
        let mut buf = vec![0xff; r.buffer_len()];
        r.emit(&mut buf).unwrap();
        assert_eq!(buf, TWO_HOPS);
        assert_eq!(r.emit(&mut [0u8; 17]), Err(Error::Truncated));
        let mut bad = r.clone();
        bad.hops.clear();
        assert_eq!(bad.emit(&mut buf), Err(Error::Malformed));
        let mut bad = r.clone();
        bad.index = 3;
        assert_eq!(bad.emit(&mut buf), Err(Error::Malformed));
    }

    #[test]
    fn consume_to_exhaustion() {
        let mut b = TWO_HOPS;
        b[2] = 0;
        let mut s = SourceRoute::new_checked(&mut b[..]).unwrap();
        assert_eq!(s.consume().unwrap().output, 1);
        assert_eq!(s.consume().unwrap().output, 3);
        assert_eq!(s.consume(), None);
        assert_eq!(s.index(), 2);
        // An exhausted route is still well formed.
        assert!(s.check_len().is_ok());
    }

    #[test]
    fn truncated_and_malformed() {
        for len in 0..TWO_HOPS.len() {
            assert_eq!(
                SourceRoute::new_checked(&TWO_HOPS[..len]).err(),
                Some(Error::Truncated),
                "{len}"
            );
        }
        let mut b = TWO_HOPS;
        b[0] = 1;
        assert_eq!(SourceRoute::new_checked(&b[..]).err(), Some(Error::Version));
        let mut b = TWO_HOPS;
        b[1] = 0;
        assert_eq!(
            SourceRoute::new_checked(&b[..]).err(),
            Some(Error::Malformed)
        );
        let mut b = TWO_HOPS;
        b[2] = 3;
        assert_eq!(
            SourceRoute::new_checked(&b[..]).err(),
            Some(Error::Malformed)
        );
        let mut b = [0u8; 6 + 17 * 6];
        b[0] = 2;
        b[1] = 17;
        assert_eq!(
            SourceRoute::new_checked(&b[..]).err(),
            Some(Error::Malformed)
        );
    }

    #[test]
    fn overlong_buffers_keep_the_payload_out() {
        let mut b = TWO_HOPS.to_vec();
        b.extend([0x45, 0, 0, 20]);
        let s = SourceRoute::new_checked(&b[..]).unwrap();
        assert_eq!(s.header_len(), 18);
        assert_eq!(SourceRouteRepr::parse(&s).unwrap(), repr());
    }
}
