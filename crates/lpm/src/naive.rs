//! The reference longest-prefix match: one hash map per prefix length,
//! probed from the longest length down, the definition of LPM (RFC 1812
//! §5.2.4.3, "longest match") written as plainly as possible. Every other
//! table is tested against it; it is not meant to be fast, and its updates
//! take a lock that its lookups also take (readers of the real tables never
//! lock). One generic table serves both families.

#![deny(unsafe_code)]

use crate::prefix::{NextHop, Prefix4, Prefix6};
use crate::table::{check_next_hop, Lpm4, Lpm4Update, Lpm6, Lpm6Update, LpmError};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;

/// An address family as the reference table needs it.
pub trait Family: Copy + Eq + Hash + Send + Sync + 'static {
    /// Address bits (32 or 128).
    const BITS: u8;
    /// The address with all but the first `len` bits cleared.
    fn masked(self, len: u8) -> Self;
}

impl Family for u32 {
    const BITS: u8 = 32;
    fn masked(self, len: u8) -> u32 {
        self & Prefix4::mask(len)
    }
}

impl Family for u128 {
    const BITS: u8 = 128;
    fn masked(self, len: u8) -> u128 {
        self & Prefix6::mask(len)
    }
}

/// Reference table for addresses of type `A`.
#[derive(Debug)]
pub struct Naive<A> {
    by_len: RwLock<Vec<HashMap<A, NextHop>>>,
}

/// Reference IPv4 table.
pub type Naive4 = Naive<u32>;
/// Reference IPv6 table.
pub type Naive6 = Naive<u128>;

impl<A: Family> Default for Naive<A> {
    fn default() -> Self {
        Naive::new()
    }
}

impl<A: Family> Naive<A> {
    /// An empty table.
    pub fn new() -> Naive<A> {
        Naive {
            by_len: RwLock::new(vec![HashMap::new(); A::BITS as usize + 1]),
        }
    }

    fn get(&self, addr: A) -> Option<NextHop> {
        let m = self.by_len.read().unwrap();
        (0..=A::BITS)
            .rev()
            .find_map(|len| m[len as usize].get(&addr.masked(len)).copied())
    }

    fn put(&self, addr: A, len: u8, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        check_next_hop(nh)?;
        Ok(self.by_len.write().unwrap()[len as usize].insert(addr, nh))
    }

    fn take(&self, addr: A, len: u8) -> Option<NextHop> {
        self.by_len.write().unwrap()[len as usize].remove(&addr)
    }

    fn count(&self) -> usize {
        self.by_len.read().unwrap().iter().map(HashMap::len).sum()
    }

    fn bytes(&self) -> usize {
        let m = self.by_len.read().unwrap();
        m.iter()
            .map(|h| h.capacity() * (std::mem::size_of::<A>() + 5))
            .sum()
    }

    /// Every route as (address, length, next hop), sorted.
    fn entries(&self) -> Vec<(A, u8, NextHop)>
    where
        A: Ord,
    {
        let m = self.by_len.read().unwrap();
        let mut v: Vec<_> = m
            .iter()
            .enumerate()
            .flat_map(|(len, h)| h.iter().map(move |(&a, &nh)| (a, len as u8, nh)))
            .collect();
        v.sort();
        v
    }
}

impl Naive4 {
    /// A table of `routes`; a prefix given twice keeps its last next hop.
    pub fn from_routes(routes: &[(Prefix4, NextHop)]) -> Result<Naive4, LpmError> {
        let t = Naive4::new();
        for &(p, nh) in routes {
            t.insert(p, nh)?;
        }
        Ok(t)
    }

    /// Every route, sorted by prefix.
    pub fn routes(&self) -> Vec<(Prefix4, NextHop)> {
        let mut v: Vec<_> = self
            .entries()
            .into_iter()
            .map(|(a, len, nh)| (Prefix4::new(a, len), nh))
            .collect();
        v.sort();
        v
    }
}

impl Naive6 {
    /// A table of `routes`; a prefix given twice keeps its last next hop.
    pub fn from_routes(routes: &[(Prefix6, NextHop)]) -> Result<Naive6, LpmError> {
        let t = Naive6::new();
        for &(p, nh) in routes {
            t.insert(p, nh)?;
        }
        Ok(t)
    }

    /// Every route, sorted by prefix.
    pub fn routes(&self) -> Vec<(Prefix6, NextHop)> {
        let mut v: Vec<_> = self
            .entries()
            .into_iter()
            .map(|(a, len, nh)| (Prefix6::new(a, len), nh))
            .collect();
        v.sort();
        v
    }
}

impl Lpm4 for Naive4 {
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        self.get(addr)
    }

    fn memory_bytes(&self) -> usize {
        self.bytes()
    }

    fn name(&self) -> &'static str {
        "naive4"
    }
}

impl Lpm4Update for Naive4 {
    fn insert(&self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        self.put(p.addr, p.len, nh)
    }

    fn remove(&self, p: Prefix4) -> Result<Option<NextHop>, LpmError> {
        Ok(self.take(p.addr, p.len))
    }

    fn route_count(&self) -> usize {
        self.count()
    }
}

impl Lpm6 for Naive6 {
    fn lookup(&self, addr: u128) -> Option<NextHop> {
        self.get(addr)
    }

    fn memory_bytes(&self) -> usize {
        self.bytes()
    }

    fn name(&self) -> &'static str {
        "naive6"
    }
}

impl Lpm6Update for Naive6 {
    fn insert(&self, p: Prefix6, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        self.put(p.addr, p.len, nh)
    }

    fn remove(&self, p: Prefix6) -> Result<Option<NextHop>, LpmError> {
        Ok(self.take(p.addr, p.len))
    }

    fn route_count(&self) -> usize {
        self.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_match_wins() {
        let t = Naive4::new();
        t.insert(Prefix4::new(0x0a00_0000, 8), NextHop(1)).unwrap();
        t.insert(Prefix4::new(0x0a01_0000, 16), NextHop(2)).unwrap();
        assert_eq!(t.lookup(0x0a01_0203), Some(NextHop(2)));
        assert_eq!(t.lookup(0x0a02_0203), Some(NextHop(1)));
        assert_eq!(t.lookup(0x0b00_0000), None);
        assert_eq!(
            t.remove(Prefix4::new(0x0a01_0000, 16)),
            Ok(Some(NextHop(2)))
        );
        assert_eq!(t.lookup(0x0a01_0203), Some(NextHop(1)));
        let t6 = Naive6::new();
        t6.insert(Prefix6::new(0, 0), NextHop(7)).unwrap();
        assert_eq!(t6.lookup(u128::MAX), Some(NextHop(7)));
        assert_eq!(t6.routes().len(), 1);
    }
}
