//! Realistic route tables for tests and benchmarks: today's prefix-length
//! distribution, more-specifics nested under covering prefixes as in the
//! global BGP table, next hops from a small set, a few ECMP groups.
//!
//! Lookup structures are sensitive to the shape of a table, not only its
//! size: DIR-24-8 to how many prefixes are longer than /24 and how /24s
//! cluster, tries to how deeply prefixes nest. The shares below are the
//! approximate shape of the IPv4 and IPv6 default-free tables in 2024 as
//! the public reports show them (Geoff Huston's BGP table reports and
//! bgp.potaroo.net, the CIDR Report), rounded from memory: a generator
//! for benchmarks, not a measurement.
//!
//! | IPv4 | share | IPv6 | share |
//! |------|-------|------|-------|
//! | /24  | 60.7% | /48  | 51.0% |
//! | /22  | 12.0% | /32  | 12.5% |
//! | /23  | 10.0% | /40  |  7.5% |
//! | /20  |  5.3% | /44  |  7.0% |
//! | /21  |  5.0% | /36  |  4.0% |
//! | /19  |  2.9% | /29  |  3.8% |
//! | /16  |  1.4% | /46  |  2.5% |
//! | /18  |  1.3% | /47  |  1.8% |
//! | /17  |  0.8% | /42  |  1.5% |
//! | /8../15 | 0.4% | others | 8.4% |
//! | /25../32 | 0.14% | | |
//!
//! The exact tables are [`V4_SHARES`] and [`V6_SHARES`]. About half of
//! real prefixes are more-specifics of another announced prefix
//! (deaggregation for traffic engineering, customer blocks inside
//! provider aggregates); here each prefix is a more-specific of an
//! earlier, shorter one with probability [`V4_NESTED_PERCENT`] /
//! [`V6_NESTED_PERCENT`], and is otherwise placed in address space no
//! other prefix covers (IPv4: public unicast space; IPv6: the RIR blocks of
//! 2000::/3). The result is seeded and deterministic: the generator uses
//! its own SplitMix64, so the same seed gives the same table on every
//! platform and release.

use crate::prefix::{Prefix4, Prefix6};
use crate::source::{Hop, RouteTable};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Total of each share table: shares are in units of 0.001%.
pub const SHARE_TOTAL: u32 = 100_000;

/// IPv4 prefix lengths and their shares of the table (units of 0.001%).
pub const V4_SHARES: [(u8, u32); 24] = [
    (8, 2),
    (9, 1),
    (10, 3),
    (11, 10),
    (12, 30),
    (13, 55),
    (14, 110),
    (15, 200),
    (16, 1400),
    (17, 800),
    (18, 1300),
    (19, 2900),
    (20, 5300),
    (21, 5000),
    (22, 12000),
    (23, 10000),
    (24, 60749),
    (25, 20),
    (26, 20),
    (27, 20),
    (28, 20),
    (29, 20),
    (30, 20),
    (32, 20),
];

/// IPv6 prefix lengths and their shares of the table (units of 0.001%).
pub const V6_SHARES: [(u8, u32); 30] = [
    (19, 5),
    (20, 30),
    (22, 20),
    (24, 60),
    (26, 60),
    (27, 80),
    (28, 400),
    (29, 3800),
    (30, 700),
    (31, 500),
    (32, 12500),
    (33, 1000),
    (34, 900),
    (35, 500),
    (36, 4000),
    (37, 300),
    (38, 700),
    (39, 400),
    (40, 7500),
    (41, 500),
    (42, 1500),
    (43, 700),
    (44, 7000),
    (45, 1000),
    (46, 2500),
    (47, 1800),
    (48, 51045),
    (56, 300),
    (64, 150),
    (128, 50),
];

/// Chance, in percent, that an IPv4 prefix is placed under an earlier,
/// shorter one.
pub const V4_NESTED_PERCENT: u64 = 45;
/// Same for IPv6.
pub const V6_NESTED_PERCENT: u64 = 40;
/// Chance, in units of 0.1%, that a route is an ECMP group (2 to 4 hops).
pub const ECMP_PERMILLE: u64 = 20;
/// Distinct hops: 8 outputs, two gateways on each.
pub const HOPS: usize = 16;

/// How often each of the [`HOPS`] hops is used, in percent: skewed, as a
/// router's routes mostly leave through a few upstreams.
const HOP_WEIGHTS: [u64; HOPS] = [20, 16, 12, 10, 8, 7, 6, 5, 4, 3, 3, 2, 1, 1, 1, 1];

/// IPv4 space that is never announced: this network, private, loopback,
/// shared, link-local, benchmarking, multicast and reserved.
const V4_RESERVED: [(u32, u8); 9] = [
    (0x0000_0000, 8),
    (0x0a00_0000, 8),
    (0x6440_0000, 10),
    (0x7f00_0000, 8),
    (0xa9fe_0000, 16),
    (0xac10_0000, 12),
    (0xc0a8_0000, 16),
    (0xc612_0000, 15),
    (0xe000_0000, 3),
];

/// IPv6 blocks the RIRs allocate from, with weights: fresh IPv6 prefixes
/// fall in these (2001::/16 is IANA's first, the /12s are APNIC, ARIN,
/// LACNIC, RIPE NCC and AFRINIC).
const V6_REGIONS: [(u128, u8, u64); 6] = [
    (0x2001 << 112, 16, 2),
    (0x2400 << 112, 12, 3),
    (0x2600 << 112, 12, 3),
    (0x2800 << 112, 12, 1),
    (0x2a00 << 112, 12, 4),
    (0x2c00 << 112, 12, 1),
];

/// A table of `v4` IPv4 and `v6` IPv6 routes shaped like today's Internet
/// (see the module doc), the same for the same arguments. Prefixes are
/// unique; the table is canonical (sorted, as every source returns it).
///
/// A million IPv4 prefixes cover about 60% of the public IPv4 space as
/// this generator places them; far larger `v4` pushes lengths toward
/// longer prefixes, and past what the space holds the table has fewer
/// than `v4` routes.
pub fn generate(v4: usize, v6: usize, seed: u64) -> RouteTable {
    let mut hop_rng = Rng::new(seed ^ 0x4859_5053);
    let hops4 = hop_set(false);
    let hops6 = hop_set(true);
    let mut t = RouteTable::new();
    t.v4 = gen_v4(v4, &mut Rng::new(seed ^ 0x7634))
        .into_iter()
        .map(|p| (p, pick_hops(&mut hop_rng, &hops4)))
        .collect();
    t.v6 = gen_v6(v6, &mut Rng::new(seed ^ 0x7636))
        .into_iter()
        .map(|p| (p, pick_hops(&mut hop_rng, &hops6)))
        .collect();
    t.v4.sort_unstable_by_key(|r| r.0);
    t.v6.sort_unstable_by_key(|r| r.0);
    t
}

/// The [`HOPS`] hops of a family: output `i / 2`, gateway `10.0.OUT.1` or
/// `.2` for IPv4, `fe80::OUT:1` or `:2` for IPv6 (link-local, as IPv6
/// routers usually peer).
fn hop_set(v6: bool) -> [Hop; HOPS] {
    std::array::from_fn(|i| {
        let out = (i / 2) as u8;
        let host = 1 + (i % 2) as u8;
        let gateway = if v6 {
            IpAddr::V6(Ipv6Addr::new(
                0xfe80,
                0,
                0,
                0,
                0,
                0,
                out.into(),
                host.into(),
            ))
        } else {
            IpAddr::V4(Ipv4Addr::new(10, 0, out, host))
        };
        Hop {
            gateway: Some(gateway),
            output: out.into(),
        }
    })
}

fn pick_hops(rng: &mut Rng, set: &[Hop; HOPS]) -> Vec<Hop> {
    let pick = |rng: &mut Rng| {
        let mut r = rng.below(100);
        for (i, w) in HOP_WEIGHTS.iter().enumerate() {
            if r < *w {
                return i;
            }
            r -= w;
        }
        HOPS - 1
    };
    if rng.below(1000) >= ECMP_PERMILLE {
        return vec![set[pick(rng)]];
    }
    let n = 2 + rng.below(3) as usize;
    let mut chosen: Vec<usize> = Vec::with_capacity(n);
    while chosen.len() < n {
        let i = pick(rng);
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.into_iter().map(|i| set[i]).collect()
}

/// How many prefixes of each length: shares of `n`, rounded down, the rest
/// given to the most common length.
fn counts(n: usize, shares: &[(u8, u32)]) -> Vec<(u8, usize)> {
    let mut out: Vec<(u8, usize)> = shares
        .iter()
        .map(|&(len, s)| {
            (
                len,
                (n as u128 * u128::from(s) / u128::from(SHARE_TOTAL)) as usize,
            )
        })
        .collect();
    let given: usize = out.iter().map(|c| c.1).sum();
    if let Some(top) = out.iter_mut().zip(shares).max_by_key(|(_, s)| s.1) {
        top.0 .1 += n - given;
    }
    out
}

/// Tries at placing a prefix before falling back to the other placement.
const NESTED_TRIES: usize = 8;
const FRESH_TRIES: usize = 64;

fn gen_v4(n: usize, rng: &mut Rng) -> Vec<Prefix4> {
    let mut out: Vec<Prefix4> = Vec::with_capacity(n);
    let mut seen: HashSet<u64, Fast> = HashSet::with_capacity_and_hasher(n, Fast::default());
    let key = |p: Prefix4| (u64::from(p.addr) << 8) | u64::from(p.len);
    // /24s covered by a prefix placed in free space: fresh prefixes go
    // only where none is set, so they are covered by no earlier prefix.
    let mut covered = Bitmap::new(1 << 24);
    let mut carry = 0usize;
    for (len, count) in counts(n, &V4_SHARES) {
        let parents = out.len();
        let want = count + carry;
        for _ in 0..want {
            let nested = parents > 0 && rng.below(100) < V4_NESTED_PERCENT;
            let mut nest = |rng: &mut Rng, out: &mut Vec<Prefix4>| {
                for _ in 0..NESTED_TRIES {
                    let parent = out[rng.below(parents as u64) as usize];
                    let p = Prefix4::new(
                        parent.addr | (rng.next() as u32 & !Prefix4::mask(parent.len)),
                        len,
                    );
                    if seen.insert(key(p)) {
                        out.push(p);
                        return true;
                    }
                }
                false
            };
            // Whatever fails here is carried to the next length.
            let _ = (nested && nest(rng, &mut out))
                || fresh_v4(rng, len, &mut covered, &mut out)
                || (parents > 0 && !nested && nest(rng, &mut out));
        }
        carry = want - (out.len() - parents);
    }
    out
}

/// Places a prefix of `len` in public space no earlier prefix covers.
fn fresh_v4(rng: &mut Rng, len: u8, covered: &mut Bitmap, out: &mut Vec<Prefix4>) -> bool {
    for _ in 0..FRESH_TRIES {
        let p = Prefix4::new(rng.next() as u32, len);
        let reserved = V4_RESERVED.iter().any(|&(a, l)| {
            let l = l.min(p.len);
            (a ^ p.addr) & Prefix4::mask(l) == 0
        });
        if reserved {
            continue;
        }
        // The /24s it spans; a longer prefix takes its whole /24, so fresh
        // prefixes longer than /24 never share one.
        let first = (p.addr >> 8) as usize;
        let n = 1usize << (24 - p.len.min(24));
        if covered.any(first, n) {
            continue;
        }
        // Not in `seen`: a nested prefix lies inside a marked region, so it
        // can never equal a fresh one.
        covered.set(first, n);
        out.push(p);
        return true;
    }
    false
}

fn gen_v6(n: usize, rng: &mut Rng) -> Vec<Prefix6> {
    let mut out: Vec<Prefix6> = Vec::with_capacity(n);
    let mut seen: HashSet<(u128, u8), Fast> = HashSet::with_capacity_and_hasher(n, Fast::default());
    let region_total: u64 = V6_REGIONS.iter().map(|r| r.2).sum();
    let mut carry = 0usize;
    for (len, count) in counts(n, &V6_SHARES) {
        let parents = out.len();
        let want = count + carry;
        for _ in 0..want {
            let nested = parents > 0 && rng.below(100) < V6_NESTED_PERCENT;
            // Whatever fails here is carried to the next length.
            for attempt in 0..NESTED_TRIES {
                // After half the tries at nesting, try free space instead.
                let p = if nested && attempt < NESTED_TRIES / 2 {
                    let parent = out[rng.below(parents as u64) as usize];
                    Prefix6::new(
                        parent.addr | (rng.next_u128() & !Prefix6::mask(parent.len)),
                        len,
                    )
                } else {
                    let mut r = rng.below(region_total);
                    let (base, rlen, _) = *V6_REGIONS
                        .iter()
                        .find(|reg| {
                            let hit = r < reg.2;
                            r = r.saturating_sub(reg.2);
                            hit
                        })
                        .unwrap_or(&V6_REGIONS[0]);
                    Prefix6::new(base | (rng.next_u128() & !Prefix6::mask(rlen)), len)
                };
                if seen.insert((p.addr, p.len)) {
                    out.push(p);
                    break;
                }
            }
        }
        carry = want - (out.len() - parents);
    }
    out
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and fixed here so a
/// seed means the same table forever.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn next_u128(&mut self) -> u128 {
        (u128::from(self.next()) << 64) | u128::from(self.next())
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below
    /// 2^-40 for the small `n` used here).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// A bit per /24.
struct Bitmap(Vec<u64>);

impl Bitmap {
    fn new(bits: usize) -> Bitmap {
        Bitmap(vec![0; bits.div_ceil(64)])
    }

    /// Whether any of bits `first..first + n` is set; `n` is a power of two
    /// and `first` a multiple of it, so a run is within one word or whole
    /// words.
    fn any(&self, first: usize, n: usize) -> bool {
        if n >= 64 {
            self.0[first / 64..(first + n) / 64].iter().any(|&w| w != 0)
        } else {
            self.0[first / 64] & Self::run(first, n) != 0
        }
    }

    fn set(&mut self, first: usize, n: usize) {
        if n >= 64 {
            self.0[first / 64..(first + n) / 64].fill(u64::MAX);
        } else {
            self.0[first / 64] |= Self::run(first, n);
        }
    }

    fn run(first: usize, n: usize) -> u64 {
        (u64::MAX >> (64 - n)) << (first % 64)
    }
}

/// A fast hasher for the prefix sets (the keys are not chosen by an
/// attacker, so SipHash's protection buys nothing here).
#[derive(Default)]
struct FastHasher(u64);

type Fast = BuildHasherDefault<FastHasher>;

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        // A multiply leaves the low bits weak; fold the high ones down
        // (murmur3's finalizer).
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z ^ (z >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{read_text, write_text, OnError};

    #[test]
    fn gen_shares_sum_to_total() {
        assert_eq!(V4_SHARES.iter().map(|s| s.1).sum::<u32>(), SHARE_TOTAL);
        assert_eq!(V6_SHARES.iter().map(|s| s.1).sum::<u32>(), SHARE_TOTAL);
        assert_eq!(HOP_WEIGHTS.iter().sum::<u64>(), 100);
        for shares in [&V4_SHARES[..], &V6_SHARES[..]] {
            assert!(shares.windows(2).all(|w| w[0].0 < w[1].0));
        }
    }

    fn length_counts<P>(routes: &[(P, Vec<Hop>)], len: impl Fn(&P) -> u8) -> [usize; 129] {
        let mut c = [0usize; 129];
        for (p, _) in routes {
            c[usize::from(len(p))] += 1;
        }
        c
    }

    fn check_shape<P: Ord + Copy>(
        routes: &[(P, Vec<Hop>)],
        n: usize,
        shares: &[(u8, u32)],
        len: impl Fn(&P) -> u8,
    ) {
        assert_eq!(routes.len(), n);
        assert!(
            routes.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted and unique"
        );
        let c = length_counts(routes, len);
        for &(l, s) in shares {
            let want = n as f64 * f64::from(s) / f64::from(SHARE_TOTAL);
            let got = c[usize::from(l)] as f64;
            assert!(
                (got - want).abs() <= want * 0.02 + 3.0,
                "/{l}: {got} prefixes, {want:.0} expected"
            );
        }
        let total: usize = shares.iter().map(|&(l, _)| c[usize::from(l)]).sum();
        assert_eq!(total, n, "only lengths from the share table");
    }

    /// Fraction of prefixes covered by another prefix of the table.
    fn nested_fraction<P: Copy + Eq + std::hash::Hash>(
        routes: &[(P, Vec<Hop>)],
        len: impl Fn(&P) -> u8,
        shorten: impl Fn(&P, u8) -> P,
    ) -> f64 {
        let set: HashSet<P> = routes.iter().map(|r| r.0).collect();
        let nested = routes
            .iter()
            .filter(|(p, _)| (0..len(p)).any(|l| set.contains(&shorten(p, l))))
            .count();
        nested as f64 / routes.len() as f64
    }

    #[test]
    fn gen_counts_lengths_uniqueness_nesting() {
        let (n4, n6) = (200_000, 40_000);
        let t = generate(n4, n6, 42);
        check_shape(&t.v4, n4, &V4_SHARES, |p| p.len);
        check_shape(&t.v6, n6, &V6_SHARES, |p| p.len);
        let share24 = length_counts(&t.v4, |p| p.len)[24] as f64 / n4 as f64;
        assert!((0.58..0.63).contains(&share24), "{share24}");
        let share48 = length_counts(&t.v6, |p| p.len)[48] as f64 / n6 as f64;
        assert!((0.49..0.53).contains(&share48), "{share48}");

        let f4 = nested_fraction(&t.v4, |p| p.len, |p, l| Prefix4::new(p.addr, l));
        let f6 = nested_fraction(&t.v6, |p| p.len, |p, l| Prefix6::new(p.addr, l));
        assert!((0.35..0.6).contains(&f4), "IPv4 nested fraction {f4}");
        assert!((0.3..0.6).contains(&f6), "IPv6 nested fraction {f6}");

        for (p, _) in &t.v4 {
            let reserved = V4_RESERVED
                .iter()
                .any(|&(a, l)| Prefix4::new(a, l).contains(p.addr));
            // Only a more-specific of a reserved block would be inside one,
            // and fresh prefixes never are, so neither are their children.
            assert!(!reserved, "{:#x}/{}", p.addr, p.len);
        }
        for (p, _) in &t.v6 {
            assert_eq!(p.addr >> 125, 1, "inside 2000::/3");
        }
    }

    #[test]
    fn gen_hops() {
        let t = generate(20_000, 5_000, 3);
        let mut ecmp = 0;
        let mut used = HashSet::new();
        for (prefix, hops) in t.routes() {
            assert!((1..=4).contains(&hops.len()));
            ecmp += usize::from(hops.len() > 1);
            for h in hops {
                assert!(h.output < 8);
                let gw = h.gateway.unwrap();
                assert_eq!(
                    gw.is_ipv6(),
                    matches!(prefix, crate::source::RoutePrefix::V6(_))
                );
                used.insert(gw);
            }
            let mut sorted = hops.to_vec();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), hops.len(), "no hop twice in a group");
        }
        assert_eq!(used.len(), 2 * HOPS);
        let share = ecmp as f64 / t.len() as f64;
        assert!((0.01..0.03).contains(&share), "ECMP share {share}");
        let interned = t.intern();
        assert!(interned.groups.len() > HOPS && interned.groups.len() < 1000);
    }

    #[test]
    fn gen_is_deterministic() {
        let a = generate(30_000, 6_000, 9);
        assert_eq!(a, generate(30_000, 6_000, 9));
        let b = generate(30_000, 6_000, 10);
        assert_ne!(a.v4, b.v4);
        assert_ne!(a.v6, b.v6);
        // Each family has its own stream: the IPv6 prefixes do not depend
        // on how many IPv4 ones were asked for.
        let c = generate(1_000, 6_000, 9);
        let prefixes = |t: &RouteTable| t.v6.iter().map(|r| r.0).collect::<Vec<_>>();
        assert_eq!(prefixes(&a), prefixes(&c));
    }

    #[test]
    fn gen_small_and_empty() {
        assert!(generate(0, 0, 1).is_empty());
        for n in [1, 2, 7, 100] {
            let t = generate(n, n, n as u64);
            assert_eq!((t.v4.len(), t.v6.len()), (n, n));
        }
    }

    #[test]
    fn gen_text_round_trip() {
        let t = generate(5_000, 1_000, 11);
        let mut text = Vec::new();
        write_text(&t, &mut text).unwrap();
        let (back, warnings) = read_text(&text[..], "gen", OnError::Refuse).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(back, t);
    }
}
