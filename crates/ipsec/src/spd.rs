//! Security policies (RFC 4301 section 4.4.1): which traffic an SA
//! protects, as `ip xfrm policy` selects it.

use crate::file::StateSpec;
use core::fmt;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// An IPv4 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    /// The network, with the host bits cleared.
    pub addr: u32,
    /// Its length, 0 to 32.
    pub len: u8,
    /// The netmask of `len`, kept so that a match is one AND and compare.
    mask: u32,
}

impl Prefix {
    /// Every address.
    pub const ANY: Prefix = Prefix {
        addr: 0,
        len: 0,
        mask: 0,
    };

    /// `A.B.C.D` or `A.B.C.D/LEN`.
    pub fn parse(s: &str) -> Option<Prefix> {
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => (a, l.parse().ok().filter(|&l: &u8| l <= 32)?),
            None => (s, 32),
        };
        let addr = u32::from(a.parse::<Ipv4Addr>().ok()?);
        let mask = Self::mask(len);
        Some(Prefix {
            addr: addr & mask,
            len,
            mask,
        })
    }

    fn mask(len: u8) -> u32 {
        u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
    }

    /// Whether `a` is inside.
    #[inline]
    pub fn contains(&self, a: u32) -> bool {
        a & self.mask == self.addr
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.len)
    }
}

/// The fields a policy matches on: addresses, protocol, ports (ICMP type
/// and code where the ports are, as Linux keeps them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selector {
    /// Source prefix.
    pub src: Prefix,
    /// Destination prefix.
    pub dst: Prefix,
    /// IP protocol, `None` for any.
    pub proto: Option<u8>,
    /// Source port (ICMP type).
    pub sport: Option<u16>,
    /// Destination port (ICMP code).
    pub dport: Option<u16>,
}

/// The fields of one packet a selector looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// Source address.
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// IP protocol.
    pub proto: u8,
    /// Source port or ICMP type; 0 when the packet has none.
    pub sport: u16,
    /// Destination port or ICMP code; 0 when the packet has none.
    pub dport: u16,
}

impl Flow {
    /// Reads an IPv4 packet's flow; `None` if it is not a whole IPv4
    /// header. Ports are read only from first fragments that hold them.
    #[inline]
    pub fn of_ipv4(ip: &[u8]) -> Option<Flow> {
        let h = ip.first_chunk::<20>()?;
        if h[0] >> 4 != 4 {
            return None;
        }
        let ihl = usize::from(h[0] & 0x0f) * 4;
        let proto = h[9];
        let first = u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
        let l4 = ip.get(ihl..).filter(|_| first).unwrap_or(&[]);
        let (sport, dport) = match (proto, l4) {
            (6 | 17 | 132, [a, b, c, d, ..]) => {
                (u16::from_be_bytes([*a, *b]), u16::from_be_bytes([*c, *d]))
            }
            (1, [t, c, ..]) => (u16::from(*t), u16::from(*c)),
            _ => (0, 0),
        };
        Some(Flow {
            src: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
            dst: u32::from_be_bytes([h[16], h[17], h[18], h[19]]),
            proto,
            sport,
            dport,
        })
    }
}

impl Selector {
    /// Everything.
    pub fn any() -> Selector {
        Selector {
            src: Prefix::ANY,
            dst: Prefix::ANY,
            proto: None,
            sport: None,
            dport: None,
        }
    }

    /// Whether the selector takes `f`.
    #[inline]
    pub fn matches(&self, f: &Flow) -> bool {
        self.src.contains(f.src)
            && self.dst.contains(f.dst)
            && self.proto.is_none_or(|p| p == f.proto)
            && self.sport.is_none_or(|p| p == f.sport)
            && self.dport.is_none_or(|p| p == f.dport)
    }
}

/// First-match lookup over an ordered list of selectors in time that does
/// not grow with the list: tuple space search (Srinivasan, Suri and
/// Varghese, SIGCOMM 1999; Open vSwitch's classifier). Selectors with the
/// same shape (prefix lengths, and which of protocol and ports they fix)
/// form a tuple; each tuple is a hash table from the masked fields to the
/// first selector of that shape and those values. A lookup probes each
/// tuple once, in the order of their first selectors, and stops as soon as
/// no later tuple can hold an earlier match. A policy database has a few
/// shapes however many policies it holds, so a packet costs a few probes,
/// where a scan costs one comparison per policy (with 100,000 policies a
/// packet paid 100,000).
#[derive(Debug, Default)]
pub struct FirstMatch {
    /// Sorted by `first`.
    tuples: Vec<Tuple>,
}

#[derive(Debug)]
struct Tuple {
    src_mask: u32,
    dst_mask: u32,
    /// Which of protocol, source port and destination port the shape fixes.
    proto: bool,
    sport: bool,
    dport: bool,
    /// The lowest index in the tuple.
    first: usize,
    /// Masked fields to the first index holding them.
    map: HashMap<u128, usize, KeyHasher>,
}

impl Tuple {
    #[inline]
    fn key(&self, src: u32, dst: u32, proto: u8, sport: u16, dport: u16) -> u128 {
        let proto = u64::from(proto) * u64::from(self.proto);
        let sport = u64::from(sport) * u64::from(self.sport);
        let dport = u64::from(dport) * u64::from(self.dport);
        let rest = (proto << 32) | (sport << 16) | dport;
        (u128::from(src & self.src_mask) << 96)
            | (u128::from(dst & self.dst_mask) << 64)
            | u128::from(rest)
    }
}

impl FirstMatch {
    /// Indexes `selectors` (in priority order: the first that matches wins).
    pub fn new<'a>(selectors: impl IntoIterator<Item = &'a Selector>) -> FirstMatch {
        let mut tuples: Vec<Tuple> = Vec::new();
        let mut by_shape: HashMap<(u8, u8, bool, bool, bool), usize> = HashMap::new();
        for (i, s) in selectors.into_iter().enumerate() {
            let shape = (
                s.src.len,
                s.dst.len,
                s.proto.is_some(),
                s.sport.is_some(),
                s.dport.is_some(),
            );
            let t = *by_shape.entry(shape).or_insert_with(|| {
                tuples.push(Tuple {
                    src_mask: s.src.mask,
                    dst_mask: s.dst.mask,
                    proto: shape.2,
                    sport: shape.3,
                    dport: shape.4,
                    first: i,
                    map: HashMap::default(),
                });
                tuples.len() - 1
            });
            let tuple = &mut tuples[t];
            let k = tuple.key(
                s.src.addr,
                s.dst.addr,
                s.proto.unwrap_or(0),
                s.sport.unwrap_or(0),
                s.dport.unwrap_or(0),
            );
            // A later selector with the same shape and values never wins.
            tuple.map.entry(k).or_insert(i);
        }
        // Tuples are made in the order of their first selector already.
        FirstMatch { tuples }
    }

    /// The index of the first selector that takes `f`.
    #[inline]
    pub fn find(&self, f: &Flow) -> Option<usize> {
        let mut best = usize::MAX;
        for t in &self.tuples {
            if t.first >= best {
                break;
            }
            if let Some(&i) = t.map.get(&t.key(f.src, f.dst, f.proto, f.sport, f.dport)) {
                best = best.min(i);
            }
        }
        (best != usize::MAX).then_some(best)
    }
}

/// A multiply-xorshift hash of a 128-bit key: the keys are made from the
/// configuration's selectors, so their spread, not a packet's choice,
/// sets the tables' probe lengths; SipHash would cost more than the rest
/// of the lookup.
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher;

impl std::hash::BuildHasher for KeyHasher {
    type Hasher = KeyHash;
    fn build_hasher(&self) -> KeyHash {
        KeyHash(0)
    }
}

#[derive(Debug)]
struct KeyHash(u64);

impl std::hash::Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    #[inline]
    fn write_u128(&mut self, k: u128) {
        let x = (k as u64) ^ ((k >> 64) as u64).rotate_left(29) ^ self.0;
        let m = u128::from(x) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
    #[inline]
    fn write_u64(&mut self, k: u64) {
        self.write_u128(u128::from(k));
    }
}

/// A policy's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Traffic leaving through the tunnel.
    Out,
    /// Traffic arriving through the tunnel for this host (in Linux); for a
    /// gateway, checked like `fwd`.
    In,
    /// Traffic arriving through the tunnel and forwarded.
    Fwd,
}

/// What a policy does with the traffic it selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Let it through: protected by the template's SA when the policy has
    /// one, in the clear otherwise.
    Allow,
    /// Drop it.
    Block,
}

/// Which SA a policy uses: `tmpl src A dst B proto esp [spi S] [reqid R]
/// mode tunnel`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Template {
    /// Tunnel source.
    pub src: Option<Ipv4Addr>,
    /// Tunnel destination.
    pub dst: Option<Ipv4Addr>,
    /// A particular SA.
    pub spi: Option<u32>,
    /// SAs with this request id.
    pub reqid: Option<u32>,
}

impl Template {
    /// Whether state `s` can serve this template.
    pub fn matches(&self, s: &StateSpec) -> bool {
        self.src.is_none_or(|a| a == s.src)
            && self.dst.is_none_or(|a| a == s.dst)
            && self.spi.is_none_or(|v| v == s.spi)
            && self.reqid.is_none_or(|v| v == s.reqid)
    }
}

/// Finds the states templates name with one hash probe per template, so
/// that matching P policies against S states costs O(P + S) rather than a
/// scan of the states per policy.
///
/// A template constrains some of (src, dst, spi, reqid) and leaves the
/// others open; for each combination of constrained fields some template
/// uses (at most 16), the states are hashed once on those fields.
pub(crate) struct TemplateIndex<'a> {
    states: &'a [StateSpec],
    /// By bitmask of constrained fields: projected key -> last state index.
    by_fields: [Option<HashMap<[u32; 4], usize>>; 16],
}

impl<'a> TemplateIndex<'a> {
    pub(crate) fn new(states: &'a [StateSpec]) -> TemplateIndex<'a> {
        TemplateIndex {
            states,
            by_fields: Default::default(),
        }
    }

    /// The index of the last state (in file order) that can serve `t`:
    /// Linux prefers the most recently added SA.
    pub(crate) fn last_match(&mut self, t: &Template) -> Option<usize> {
        let fields = usize::from(t.src.is_some())
            | usize::from(t.dst.is_some()) << 1
            | usize::from(t.spi.is_some()) << 2
            | usize::from(t.reqid.is_some()) << 3;
        if fields == 0 {
            return self.states.len().checked_sub(1);
        }
        let project = |src: u32, dst: u32, spi: u32, reqid: u32| {
            let keep = |bit: usize, v: u32| if fields & bit != 0 { v } else { 0 };
            [keep(1, src), keep(2, dst), keep(4, spi), keep(8, reqid)]
        };
        let states = self.states;
        let map = self.by_fields[fields].get_or_insert_with(|| {
            let mut m = HashMap::with_capacity(states.len());
            for (i, s) in states.iter().enumerate() {
                // Later states overwrite earlier ones: the last one wins.
                m.insert(project(s.src.into(), s.dst.into(), s.spi, s.reqid), i);
            }
            m
        });
        map.get(&project(
            t.src.map_or(0, u32::from),
            t.dst.map_or(0, u32::from),
            t.spi.unwrap_or(0),
            t.reqid.unwrap_or(0),
        ))
        .copied()
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(a) = self.src {
            write!(f, "src {a}")?;
            sep = " ";
        }
        if let Some(a) = self.dst {
            write!(f, "{sep}dst {a}")?;
            sep = " ";
        }
        if let Some(v) = self.spi {
            write!(f, "{sep}spi {v:#x}")?;
            sep = " ";
        }
        if let Some(v) = self.reqid {
            write!(f, "{sep}reqid {v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Selectors drawn from a small space, so that flows often match
    /// several and the order matters.
    fn selector() -> impl Strategy<Value = Selector> {
        let prefix =
            (0u32..4, prop::sample::select(vec![0u8, 8, 16, 24, 32])).prop_map(|(n, len)| {
                let mask = Prefix::mask(len);
                Prefix {
                    addr: (0x0a00_0000 | n << 8 | n) & mask,
                    len,
                    mask,
                }
            });
        (
            prefix.clone(),
            prefix,
            prop::option::of(prop::sample::select(vec![1u8, 6, 17])),
            prop::option::of(0u16..3),
            prop::option::of(0u16..3),
        )
            .prop_map(|(src, dst, proto, sport, dport)| Selector {
                src,
                dst,
                proto,
                sport,
                dport,
            })
    }

    fn flow() -> impl Strategy<Value = Flow> {
        let addr = (0u32..4, 0u32..4).prop_map(|(n, h)| 0x0a00_0000 | n << 8 | h);
        (
            addr.clone(),
            addr,
            prop::sample::select(vec![1u8, 6, 17, 50]),
            0u16..3,
            0u16..3,
        )
            .prop_map(|(src, dst, proto, sport, dport)| Flow {
                src,
                dst,
                proto,
                sport,
                dport,
            })
    }

    proptest! {
        #[test]
        fn first_match_index_agrees_with_a_scan(
            sels in prop::collection::vec(selector(), 0..60),
            flows in prop::collection::vec(flow(), 1..40),
        ) {
            let index = FirstMatch::new(&sels);
            for f in &flows {
                prop_assert_eq!(index.find(f), sels.iter().position(|s| s.matches(f)));
            }
        }
    }

    #[test]
    fn a_hundred_thousand_policies_take_a_few_probes() {
        // One /32 pair per peer, as a gateway with many peers has: one shape.
        let sels: Vec<Selector> = (0..100_000u32)
            .map(|i| Selector {
                src: Prefix::parse(&Ipv4Addr::from(0x0a00_0000 + i).to_string()).unwrap(),
                dst: Prefix::parse(&Ipv4Addr::from(0x0b00_0000 + i).to_string()).unwrap(),
                ..Selector::any()
            })
            .collect();
        let index = FirstMatch::new(&sels);
        assert_eq!(index.tuples.len(), 1);
        let f = |i: u32| Flow {
            src: 0x0a00_0000 + i,
            dst: 0x0b00_0000 + i,
            proto: 17,
            sport: 9,
            dport: 9,
        };
        assert_eq!(index.find(&f(99_999)), Some(99_999));
        assert_eq!(index.find(&f(100_000)), None);
    }

    #[test]
    fn prefixes() {
        let p = Prefix::parse("192.168.1.77/24").unwrap();
        assert_eq!(p.to_string(), "192.168.1.0/24");
        assert!(p.contains(0xc0a8_01ff));
        assert!(!p.contains(0xc0a8_0201));
        assert!(Prefix::parse("0.0.0.0/0").unwrap().contains(1));
        assert_eq!(Prefix::parse("10.0.0.1").unwrap().len, 32);
        assert!(Prefix::parse("10.0.0.1/33").is_none());
        assert!(Prefix::parse("10.0.0/8").is_none());
    }

    #[test]
    fn flows_from_real_headers() {
        // A TCP SYN 192.168.1.2:40000 -> 192.168.2.2:80.
        let mut p = vec![
            0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 192, 168, 1, 2, 192, 168, 2, 2,
        ];
        p.extend_from_slice(&[
            0x9c, 0x40, 0, 80, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 2, 0, 0, 0, 0, 0, 0,
        ]);
        let f = Flow::of_ipv4(&p).unwrap();
        assert_eq!((f.proto, f.sport, f.dport), (6, 40000, 80));
        let mut s = Selector::any();
        s.dst = Prefix::parse("192.168.2.0/24").unwrap();
        s.proto = Some(6);
        s.dport = Some(80);
        assert!(s.matches(&f));
        s.dport = Some(443);
        assert!(!s.matches(&f));
        // A later fragment has no ports.
        p[6] = 0x00;
        p[7] = 0x10;
        assert_eq!(Flow::of_ipv4(&p).unwrap().dport, 0);
        assert!(Flow::of_ipv4(&p[..19]).is_none());
    }
}
