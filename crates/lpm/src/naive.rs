//! The reference longest-prefix match: one hash map per prefix length,
//! probed from the longest length down, the definition of LPM (RFC 1812
//! §5.2.4.3, "longest match") written as plainly as possible. Every other
//! table is tested against it; it is not meant to be fast, and its updates
//! take a lock that its lookups also take (readers of the real tables never
//! lock).

#![deny(unsafe_code)]

use crate::prefix::{NextHop, Prefix4, Prefix6};
use crate::table::{check_next_hop, Lpm4, Lpm4Update, Lpm6, Lpm6Update, LpmError};
use std::collections::HashMap;
use std::sync::RwLock;

/// Reference IPv4 table.
#[derive(Debug)]
pub struct Naive4 {
    by_len: RwLock<Vec<HashMap<u32, NextHop>>>,
}

impl Default for Naive4 {
    fn default() -> Self {
        Naive4::new()
    }
}

impl Naive4 {
    /// An empty table.
    pub fn new() -> Naive4 {
        Naive4 {
            by_len: RwLock::new(vec![HashMap::new(); 33]),
        }
    }

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
        let m = self.by_len.read().unwrap();
        let mut v: Vec<_> = m
            .iter()
            .enumerate()
            .flat_map(|(len, h)| {
                h.iter()
                    .map(move |(&a, &nh)| (Prefix4::new(a, len as u8), nh))
            })
            .collect();
        v.sort();
        v
    }
}

impl Lpm4 for Naive4 {
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        let m = self.by_len.read().unwrap();
        (0..=32u8)
            .rev()
            .find_map(|len| m[len as usize].get(&(addr & Prefix4::mask(len))).copied())
    }

    fn memory_bytes(&self) -> usize {
        let m = self.by_len.read().unwrap();
        m.iter().map(|h| h.capacity() * 9).sum()
    }

    fn name(&self) -> &'static str {
        "naive4"
    }
}

impl Lpm4Update for Naive4 {
    fn insert(&self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        check_next_hop(nh)?;
        Ok(self.by_len.write().unwrap()[p.len as usize].insert(p.addr, nh))
    }

    fn remove(&self, p: Prefix4) -> Result<Option<NextHop>, LpmError> {
        Ok(self.by_len.write().unwrap()[p.len as usize].remove(&p.addr))
    }

    fn route_count(&self) -> usize {
        self.by_len.read().unwrap().iter().map(HashMap::len).sum()
    }
}

/// Reference IPv6 table.
#[derive(Debug)]
pub struct Naive6 {
    by_len: RwLock<Vec<HashMap<u128, NextHop>>>,
}

impl Default for Naive6 {
    fn default() -> Self {
        Naive6::new()
    }
}

impl Naive6 {
    /// An empty table.
    pub fn new() -> Naive6 {
        Naive6 {
            by_len: RwLock::new(vec![HashMap::new(); 129]),
        }
    }

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
        let m = self.by_len.read().unwrap();
        let mut v: Vec<_> = m
            .iter()
            .enumerate()
            .flat_map(|(len, h)| {
                h.iter()
                    .map(move |(&a, &nh)| (Prefix6::new(a, len as u8), nh))
            })
            .collect();
        v.sort();
        v
    }
}

impl Lpm6 for Naive6 {
    fn lookup(&self, addr: u128) -> Option<NextHop> {
        let m = self.by_len.read().unwrap();
        (0..=128u8)
            .rev()
            .find_map(|len| m[len as usize].get(&(addr & Prefix6::mask(len))).copied())
    }

    fn memory_bytes(&self) -> usize {
        let m = self.by_len.read().unwrap();
        m.iter().map(|h| h.capacity() * 21).sum()
    }

    fn name(&self) -> &'static str {
        "naive6"
    }
}

impl Lpm6Update for Naive6 {
    fn insert(&self, p: Prefix6, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        check_next_hop(nh)?;
        Ok(self.by_len.write().unwrap()[p.len as usize].insert(p.addr, nh))
    }

    fn remove(&self, p: Prefix6) -> Result<Option<NextHop>, LpmError> {
        Ok(self.by_len.write().unwrap()[p.len as usize].remove(&p.addr))
    }

    fn route_count(&self) -> usize {
        self.by_len.read().unwrap().iter().map(HashMap::len).sum()
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
