//! Flow identifiers and the in-place rewrite of a packet's addresses and
//! ports, with every checksum they are covered by patched incrementally
//! (RFC 1624 eqn. 3): the IP header checksum (RFC 791), the TCP (RFC 793)
//! and UDP (RFC 768) checksums through their pseudo-header, and the ICMP
//! checksum (RFC 792) for an echo identifier.

use crate::ip::header::{be16, be32};
use bricks_element::Packet;
use bricks_wire::checksum;
use std::net::Ipv4Addr;

pub(crate) const PROTO_ICMP: u8 = 1;
pub(crate) const PROTO_TCP: u8 = 6;
pub(crate) const PROTO_UDP: u8 = 17;

/// A flow's addresses and ports, host order (Click's `IPFlowID`). A
/// field the mapping does not use is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Tuple {
    pub saddr: u32,
    pub daddr: u32,
    pub sport: u16,
    pub dport: u16,
}

impl Tuple {
    /// The flow the other way round: what a reply carries.
    #[inline]
    pub fn reverse(self) -> Tuple {
        Tuple {
            saddr: self.daddr,
            daddr: self.saddr,
            sport: self.dport,
            dport: self.sport,
        }
    }
}

impl core::fmt::Display for Tuple {
    /// Click's `IPFlowID::unparse`: `(SA, SP, DA, DP)`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "({}, {}, {}, {})",
            Ipv4Addr::from(self.saddr),
            self.sport,
            Ipv4Addr::from(self.daddr),
            self.dport
        )
    }
}

/// What a mapping table is keyed by: the flow, its protocol (0 for the
/// address-only rewriters) and the rewriter that owns the mapping (one
/// flow set may hold several rewriters' mappings when they share a
/// MAPPING_CAPACITY).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Key {
    pub tuple: Tuple,
    pub proto: u8,
    pub owner: u16,
}

impl Key {
    /// Two words for the keyed hash.
    #[inline(always)]
    pub(crate) fn words(&self) -> (u64, u64) {
        let t = &self.tuple;
        (
            (u64::from(t.saddr) << 32) | u64::from(t.daddr),
            (u64::from(t.sport) << 48)
                | (u64::from(t.dport) << 32)
                | (u64::from(self.proto) << 16)
                | u64::from(self.owner),
        )
    }
}

impl std::hash::Hash for Key {
    #[inline(always)]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let (a, b) = self.words();
        state.write_u64(a);
        state.write_u64(b);
    }
}

/// Which fields a mapping writes.
pub(crate) const W_SADDR: u8 = 1;
pub(crate) const W_SPORT: u8 = 2;
pub(crate) const W_DADDR: u8 = 4;
pub(crate) const W_DPORT: u8 = 8;
pub(crate) const W_ALL: u8 = 15;

/// What the rewriter learnt of a packet's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    pub tuple: Tuple,
    pub proto: u8,
    /// IP header length in bytes.
    pub ihl: usize,
    /// The transport header is there (first fragment, at least 8 bytes).
    pub transport: bool,
    /// Bytes of TCP or UDP payload (0 when unknown).
    pub payload: usize,
    /// TCP FIN or RST set.
    pub fin_rst: bool,
    /// ICMP type (for the ping rewriter).
    pub icmp_type: u8,
}

/// Why a packet cannot be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// Not IPv4, or shorter than its header says.
    BadIp,
}

/// Reads the flow of the IPv4 packet at the start of `ip` (the packet's
/// IP header onwards). Ports are read only from a first fragment with 8
/// bytes of transport header; otherwise they are 0 and `transport` false.
#[inline]
pub fn parse(ip: &[u8]) -> Result<Parsed, Malformed> {
    let Some(h) = ip.first_chunk::<20>() else {
        return Err(Malformed::BadIp);
    };
    let ihl = usize::from(h[0] & 0x0f) * 4;
    if h[0] >> 4 != 4 || ihl < 20 || ip.len() < ihl {
        return Err(Malformed::BadIp);
    }
    let total = usize::from(be16(h, 2)).clamp(ihl, ip.len());
    let proto = h[9];
    let first_frag = be16(h, 6) & 0x1fff == 0;
    let mut p = Parsed {
        tuple: Tuple {
            saddr: be32(h, 12),
            daddr: be32(h, 16),
            sport: 0,
            dport: 0,
        },
        proto,
        ihl,
        transport: false,
        payload: 0,
        fin_rst: false,
        icmp_type: 0,
    };
    let t = &ip[ihl..total];
    if first_frag && t.len() >= 8 {
        p.transport = true;
        p.tuple.sport = be16(t, 0);
        p.tuple.dport = be16(t, 2);
        match proto {
            PROTO_TCP if t.len() >= 14 => {
                let off = usize::from(t[12] >> 4) * 4;
                p.payload = t.len().saturating_sub(off);
                p.fin_rst = t[13] & 0x05 != 0;
            }
            PROTO_UDP => p.payload = t.len() - 8,
            PROTO_ICMP => {
                p.icmp_type = t[0];
                // Echo: the identifier stands for both ports.
                p.tuple.sport = be16(t, 4);
                p.tuple.dport = p.tuple.sport;
            }
            _ => {}
        }
    }
    Ok(p)
}

/// Writes `new`'s fields named by `writes` into the packet whose headers
/// `parsed` describes, patching the checksums. Ports are written only
/// when the transport header is there; for ICMP the source port is the
/// echo identifier. Returns the new destination address.
#[inline]
pub fn apply(p: &mut Packet, parsed: &Parsed, new: &Tuple, writes: u8) -> u32 {
    let ip = p.l3_bytes_mut();
    let ihl = parsed.ihl;
    let old = parsed.tuple;
    let mut ipsum = be16(ip, 10);
    // The transport checksum's offset, if the packet has one to patch.
    let l4sum_at = if !parsed.transport {
        None
    } else {
        match parsed.proto {
            PROTO_TCP if ip.len() >= ihl + 18 => Some(ihl + 16),
            PROTO_UDP if be16(ip, ihl + 6) != 0 => Some(ihl + 6),
            PROTO_ICMP => Some(ihl + 2),
            _ => None,
        }
    };
    let pseudo = l4sum_at.is_some() && parsed.proto != PROTO_ICMP;
    let mut l4sum = l4sum_at.map_or(0, |at| be16(ip, at));
    let mut daddr = old.daddr;
    if writes & W_SADDR != 0 && new.saddr != old.saddr {
        ipsum = checksum::update32(ipsum, old.saddr, new.saddr);
        if pseudo {
            l4sum = checksum::update32(l4sum, old.saddr, new.saddr);
        }
        ip[12..16].copy_from_slice(&new.saddr.to_be_bytes());
    }
    if writes & W_DADDR != 0 && new.daddr != old.daddr {
        ipsum = checksum::update32(ipsum, old.daddr, new.daddr);
        if pseudo {
            l4sum = checksum::update32(l4sum, old.daddr, new.daddr);
        }
        ip[16..20].copy_from_slice(&new.daddr.to_be_bytes());
        daddr = new.daddr;
    }
    ip[10..12].copy_from_slice(&ipsum.to_be_bytes());
    if parsed.transport {
        if parsed.proto == PROTO_ICMP {
            if writes & W_SPORT != 0 && new.sport != old.sport {
                l4sum = checksum::update(l4sum, old.sport, new.sport);
                ip[ihl + 4..ihl + 6].copy_from_slice(&new.sport.to_be_bytes());
            }
        } else {
            if writes & W_SPORT != 0 && new.sport != old.sport {
                l4sum = checksum::update(l4sum, old.sport, new.sport);
                ip[ihl..ihl + 2].copy_from_slice(&new.sport.to_be_bytes());
            }
            if writes & W_DPORT != 0 && new.dport != old.dport {
                l4sum = checksum::update(l4sum, old.dport, new.dport);
                ip[ihl + 2..ihl + 4].copy_from_slice(&new.dport.to_be_bytes());
            }
        }
        if let Some(at) = l4sum_at {
            if parsed.proto == PROTO_UDP && l4sum == 0 {
                // RFC 768: a computed zero is sent as all ones.
                l4sum = 0xffff;
            }
            ip[at..at + 2].copy_from_slice(&l4sum.to_be_bytes());
            if parsed.proto == PROTO_ICMP && l4sum == 0 {
                // An all-zero echo (identifier 0, sequence 0, no data)
                // must read 0xffff, not eqn. 3's -0.
                l4sum = checksum::fix_zero(l4sum, &ip[ihl..]);
                ip[at..at + 2].copy_from_slice(&l4sum.to_be_bytes());
            }
        }
    }
    daddr
}

#[cfg(test)]
pub(crate) mod testing {
    //! Packets for the rewriters' tests, with correct checksums.
    use crate::ip::transport::segment_checksum;
    use bricks_wire::checksum;

    /// A TCP (proto 6), UDP (17) or ICMP echo (1, sport = identifier,
    /// dport = type) packet with `payload` bytes of data.
    pub fn packet(
        proto: u8,
        src: [u8; 4],
        sport: u16,
        dst: [u8; 4],
        dport: u16,
        payload: usize,
    ) -> Vec<u8> {
        let l4 = match proto {
            6 => 20,
            _ => 8,
        };
        let len = 20 + l4 + payload;
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[8] = 64;
        p[9] = proto;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        for (i, b) in p[20 + l4..].iter_mut().enumerate() {
            *b = i as u8;
        }
        match proto {
            1 => {
                p[20] = dport as u8;
                p[24..26].copy_from_slice(&sport.to_be_bytes());
                let s = !checksum::data(&p[20..]);
                p[22..24].copy_from_slice(&s.to_be_bytes());
            }
            _ => {
                p[20..22].copy_from_slice(&sport.to_be_bytes());
                p[22..24].copy_from_slice(&dport.to_be_bytes());
                if proto == 6 {
                    p[32] = 0x50;
                    p[33] = 0x10;
                } else {
                    p[24..26].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
                }
                let (ip, t) = p.split_at_mut(20);
                let s = segment_checksum(ip, 20, t);
                let at = if proto == 6 { 16 } else { 6 };
                t[at..at + 2].copy_from_slice(&s.to_be_bytes());
            }
        }
        let h: &[u8; 20] = p[..20].try_into().unwrap();
        let s = !checksum::header20(h);
        p[10..12].copy_from_slice(&s.to_be_bytes());
        p
    }

    /// Whether every checksum of `p` (IP, and TCP/UDP/ICMP) verifies.
    pub fn checksums_ok(p: &[u8]) -> bool {
        let h: &[u8; 20] = p[..20].try_into().unwrap();
        if checksum::header20(h) != 0xffff {
            return false;
        }
        match p[9] {
            1 => checksum::data(&p[20..]) == 0xffff,
            6 | 17 => {
                let mut q = p.to_vec();
                let at = if p[9] == 6 { 36 } else { 26 };
                let sent = u16::from_be_bytes([q[at], q[at + 1]]);
                q[at] = 0;
                q[at + 1] = 0;
                let (ip, t) = q.split_at_mut(20);
                let s = segment_checksum(ip, 20, t);
                s == sent
                    || (s == 0 && sent == 0xffff)
                    || (p[9] == 17 && sent == 0xffff && s == 0xffff)
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{checksums_ok, packet};
    use super::*;

    #[test]
    fn parses_tcp_udp_icmp() {
        let p = packet(6, [18, 26, 4, 44], 30, [10, 0, 0, 4], 40, 5);
        let f = parse(&p).unwrap();
        assert_eq!(f.tuple.sport, 30);
        assert_eq!(f.tuple.dport, 40);
        assert_eq!(f.payload, 5);
        assert!(f.transport);
        let p = packet(1, [1, 0, 0, 1], 77, [5, 0, 0, 5], 8, 0);
        let f = parse(&p).unwrap();
        assert_eq!((f.tuple.sport, f.icmp_type), (77, 8));
    }

    #[test]
    fn refuses_what_is_not_ipv4() {
        assert_eq!(parse(&[0x45; 19]), Err(Malformed::BadIp));
        let mut p = packet(17, [1, 0, 0, 1], 1, [2, 0, 0, 2], 2, 0);
        p[0] = 0x65;
        assert_eq!(parse(&p), Err(Malformed::BadIp));
        p[0] = 0x4f;
        assert_eq!(parse(&p), Err(Malformed::BadIp));
    }

    #[test]
    fn later_fragments_have_no_ports() {
        let mut p = packet(17, [1, 0, 0, 1], 1, [2, 0, 0, 2], 2, 16);
        p[6] = 0x00;
        p[7] = 0x02;
        let f = parse(&p).unwrap();
        assert!(!f.transport);
        assert_eq!(f.tuple.sport, 0);
    }

    #[test]
    fn rewrites_keep_every_checksum_right() {
        for proto in [6u8, 17, 1] {
            let raw = packet(proto, [18, 26, 4, 44], 30, [10, 0, 0, 4], 40, 7);
            let mut p = Packet::from_slice(&raw).unwrap();
            let f = parse(p.data()).unwrap();
            let new = Tuple {
                saddr: u32::from(Ipv4Addr::new(1, 0, 0, 1)),
                sport: 1024,
                daddr: u32::from(Ipv4Addr::new(10, 9, 8, 7)),
                dport: 4321,
            };
            let d = apply(&mut p, &f, &new, W_ALL);
            assert_eq!(d, new.daddr);
            let out = p.data();
            assert!(checksums_ok(out), "proto {proto}");
            assert_eq!(&out[12..16], &[1, 0, 0, 1]);
            assert_eq!(&out[16..20], &[10, 9, 8, 7]);
            if proto != 1 {
                assert_eq!(&out[20..24], &[4, 0, 0x10, 0xe1]);
            } else {
                assert_eq!(&out[24..26], &[4, 0]);
            }
        }
    }

    #[test]
    fn an_all_zero_echo_gets_checksum_ffff() {
        // Echo request, identifier 10230, sequence 0, no data: rewritten
        // to identifier 0 the ICMP message is all zeros but the type.
        let raw = packet(1, [1, 0, 0, 1], 10230, [5, 0, 0, 5], 0, 0);
        let mut p = Packet::from_slice(&raw).unwrap();
        let f = parse(p.data()).unwrap();
        let new = Tuple {
            sport: 0,
            ..f.tuple
        };
        apply(&mut p, &f, &new, W_SPORT);
        assert_eq!(&p.data()[20..28], &[0, 0, 0xff, 0xff, 0, 0, 0, 0]);
        assert!(checksums_ok(p.data()));
    }

    #[test]
    fn a_udp_packet_without_checksum_keeps_none() {
        let mut raw = packet(17, [1, 0, 0, 1], 1, [2, 0, 0, 2], 2, 4);
        raw[26] = 0;
        raw[27] = 0;
        let mut p = Packet::from_slice(&raw).unwrap();
        let f = parse(p.data()).unwrap();
        let new = Tuple {
            saddr: 0x0a000001,
            sport: 9,
            ..f.tuple
        };
        apply(&mut p, &f, &new, W_ALL);
        assert_eq!(&p.data()[26..28], &[0, 0]);
    }
}
