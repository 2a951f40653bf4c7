//! Prefixes and next hops.

/// Index of a next hop in the caller's next-hop table. Tables store it in
/// fewer bits where they can; [`NextHop::MAX`] is the largest accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NextHop(pub u32);

impl NextHop {
    /// The largest next-hop index every table can hold (2^22 - 1).
    pub const MAX: u32 = (1 << 22) - 1;
}

/// The raw answer ([`Lpm4::lookup_batch_raw`](crate::Lpm4::lookup_batch_raw))
/// for an address no prefix contains. Far above [`NextHop::MAX`], so a
/// caller that indexes its next-hop table with a raw answer finds no
/// route and an index past the table's end by the same bounds check.
pub const NO_ROUTE: u32 = u32::MAX;

/// An answer a batch lookup writes: `Option<NextHop>`, or a raw `u32`
/// (the next hop's index, or [`NO_ROUTE`]), half the bytes and no tag
/// to test. Tables write either through one generic loop.
pub trait Answer: Copy {
    /// The answer for `nh`.
    fn answer(nh: Option<NextHop>) -> Self;
}

impl Answer for Option<NextHop> {
    #[inline(always)]
    fn answer(nh: Option<NextHop>) -> Self {
        nh
    }
}

impl Answer for u32 {
    #[inline(always)]
    fn answer(nh: Option<NextHop>) -> Self {
        nh.map_or(NO_ROUTE, |h| h.0)
    }
}

/// An IPv4 prefix: address (host bits zero) and length 0..=32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix4 {
    /// The network address, host order, host bits zero.
    pub addr: u32,
    /// Prefix length.
    pub len: u8,
}

impl Prefix4 {
    /// A prefix; host bits of `addr` are cleared. `len` above 32 is
    /// clamped.
    pub fn new(addr: u32, len: u8) -> Prefix4 {
        let len = len.min(32);
        Prefix4 {
            addr: addr & Self::mask(len),
            len,
        }
    }

    /// The netmask of a length.
    #[inline(always)]
    pub fn mask(len: u8) -> u32 {
        if len == 0 {
            0
        } else {
            u32::MAX << (32 - len.min(32))
        }
    }

    /// Whether `a` is inside.
    #[inline]
    pub fn contains(&self, a: u32) -> bool {
        a & Self::mask(self.len) == self.addr
    }
}

/// An IPv6 prefix: address (host bits zero) and length 0..=128.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix6 {
    /// The network address, host order, host bits zero.
    pub addr: u128,
    /// Prefix length.
    pub len: u8,
}

impl Prefix6 {
    /// A prefix; host bits of `addr` are cleared.
    pub fn new(addr: u128, len: u8) -> Prefix6 {
        let len = len.min(128);
        Prefix6 {
            addr: addr & Self::mask(len),
            len,
        }
    }

    /// The netmask of a length.
    #[inline(always)]
    pub fn mask(len: u8) -> u128 {
        if len == 0 {
            0
        } else {
            u128::MAX << (128 - len.min(128))
        }
    }

    /// Whether `a` is inside.
    #[inline]
    pub fn contains(&self, a: u128) -> bool {
        a & Self::mask(self.len) == self.addr
    }
}
