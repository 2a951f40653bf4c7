//! One conformance suite for every longest-prefix-match table: each IPv4
//! table (DIR-24-8 built by sweep, DIR-24-8 built by inserts, Trie4) and
//! each IPv6 table (Poptrie6) against the naive reference, with property
//! tests on random tables (nested, overlapping and duplicate prefixes;
//! addresses at and around every prefix's edges), random update sequences,
//! edge cases (/0, /32, /128, withdraw of a covering prefix, re-insert,
//! withdraw of a missing prefix), batched against single lookups, and a
//! concurrency test of updates while readers look up.

use bricks_lpm::{
    Dir24_8, Linear4, Lpm4, Lpm4Update, Lpm6, Lpm6Update, LpmError, Naive4, Naive6, NextHop,
    Poptrie6, Prefix4, Prefix6, Trie4, NO_ROUTE,
};
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

type Routes4 = Vec<(Prefix4, NextHop)>;
type Routes6 = Vec<(Prefix6, NextHop)>;

// ---------------------------------------------------------------- IPv4

fn len4() -> impl Strategy<Value = u8> {
    prop_oneof![
        // Shorter prefixes rewrite millions of entries, slow in debug
        // builds: /0 to /3 have their own tests (`edges`, `short`).
        1 => 4u8..=7,
        6 => 8u8..=23,
        6 => Just(24u8),
        6 => 25u8..=32,
    ]
}

/// Routes whose prefixes cluster around a few base addresses, so that
/// they nest and overlap; duplicates (same prefix twice) happen.
fn routes4() -> impl Strategy<Value = Routes4> {
    prop::collection::vec(any::<u32>(), 1..4).prop_flat_map(|bases| {
        let n = bases.len();
        prop::collection::vec((0..n, any::<u32>(), 0u32..32, len4(), 0u32..6), 0..48).prop_map(
            move |v| {
                v.into_iter()
                    .map(|(b, noise, bits, len, nh)| {
                        // Flip only low bits of the base: prefixes share
                        // their top bits and so cover each other.
                        let flip = noise & (u32::MAX >> (bits.max(1)));
                        (Prefix4::new(bases[b] ^ flip, len), NextHop(nh))
                    })
                    .collect()
            },
        )
    })
}

/// Addresses worth asking about: each prefix's first and last address,
/// their neighbours outside it, one inside, plus random ones.
fn probes4(routes: &[(Prefix4, NextHop)], random: &[u32]) -> Vec<u32> {
    let mut v = random.to_vec();
    v.extend([0, u32::MAX, 1 << 31, (1 << 31) - 1]);
    for (p, _) in routes {
        let last = p.addr | !Prefix4::mask(p.len);
        v.extend([
            p.addr,
            last,
            p.addr.wrapping_sub(1),
            last.wrapping_add(1),
            p.addr + (last - p.addr) / 2,
        ]);
    }
    v
}

/// Every answer of `t` agrees with the reference, single and batched,
/// with `Option` answers and raw ones (in place). The addresses go in
/// whole and by every prefix length, so that full chunks, a short last
/// chunk, and a batch of one are all met.
fn agree4(t: &dyn Lpm4, reference: &Naive4, addrs: &[u32]) -> Result<(), TestCaseError> {
    let mut out = vec![Some(NextHop(u32::MAX)); addrs.len()];
    t.lookup_batch(addrs, &mut out);
    for n in [addrs.len(), 1, 15, 16, 17, 31] {
        let part = &addrs[..n.min(addrs.len())];
        let mut raw = part.to_vec();
        t.lookup_batch_raw(&mut raw);
        for (&a, &r) in part.iter().zip(&raw) {
            let want = reference.lookup(a).map_or(NO_ROUTE, |h| h.0);
            prop_assert_eq!(r, want, "{} raw batched lookup of {:#010x}", t.name(), a);
        }
    }
    for (&a, &b) in addrs.iter().zip(&out) {
        let want = reference.lookup(a);
        prop_assert_eq!(
            t.lookup(a),
            want,
            "{} single lookup of {:#010x}",
            t.name(),
            a
        );
        prop_assert_eq!(b, want, "{} batched lookup of {:#010x}", t.name(), a);
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Op4 {
    Insert(Prefix4, NextHop),
    /// Withdraw the route at this index of the initial table (or a
    /// prefix that may not exist, when out of range).
    Remove(usize, Prefix4),
}

fn ops4() -> impl Strategy<Value = Vec<Op4>> {
    prop::collection::vec(
        prop_oneof![
            (any::<u32>(), len4(), 0u32..6)
                .prop_map(|(a, l, nh)| Op4::Insert(Prefix4::new(a, l), NextHop(nh))),
            (0usize..64, any::<u32>(), len4())
                .prop_map(|(i, a, l)| Op4::Remove(i, Prefix4::new(a, l))),
        ],
        0..24,
    )
}

macro_rules! lpm4_suite {
    ($name:ident, $make:expr) => {
        lpm4_suite!($name, $make, 0x00ff_ffff);
    };
    ($name:ident, $make:expr, $churn:expr) => {
        mod $name {
            use super::*;

            fn make(routes: &[(Prefix4, NextHop)]) -> Box<dyn Lpm4Update> {
                let f: fn(&[(Prefix4, NextHop)]) -> Box<dyn Lpm4Update> = $make;
                f(routes)
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(128))]

                #[test]
                fn random_tables_agree(routes in routes4(), random in prop::collection::vec(any::<u32>(), 32)) {
                    let reference = Naive4::from_routes(&routes).unwrap();
                    let t = make(&routes);
                    prop_assert_eq!(t.route_count(), reference.route_count());
                    agree4(&*t, &reference, &probes4(&routes, &random))?;
                }

                #[test]
                fn random_updates_agree(routes in routes4(), ops in ops4(), random in prop::collection::vec(any::<u32>(), 16)) {
                    let reference = Naive4::from_routes(&routes).unwrap();
                    let t = make(&routes);
                    let mut touched = routes.clone();
                    for op in ops {
                        match op {
                            Op4::Insert(p, nh) => {
                                prop_assert_eq!(t.insert(p, nh), reference.insert(p, nh));
                                touched.push((p, nh));
                            }
                            Op4::Remove(i, other) => {
                                let p = routes.get(i).map_or(other, |r| r.0);
                                prop_assert_eq!(t.remove(p), reference.remove(p));
                            }
                        }
                    }
                    prop_assert_eq!(t.route_count(), reference.route_count());
                    agree4(&*t, &reference, &probes4(&touched, &random))?;
                }
            }

            #[test]
            fn edges() {
                edges4(&*make(&[]));
            }

            #[test]
            fn short() {
                let t = make(&[]);
                let reference = Naive4::new();
                let routes = [
                    (pfx4("0.0.0.0/1"), NextHop(1)),
                    (pfx4("128.0.0.0/2"), NextHop(2)),
                    (pfx4("192.0.0.0/3"), NextHop(3)),
                    (pfx4("64.0.0.0/3"), NextHop(4)),
                    (pfx4("200.1.0.0/16"), NextHop(5)),
                    (pfx4("200.1.2.3/32"), NextHop(6)),
                ];
                let probes = probes4(&routes, &[]);
                for &(p, nh) in &routes {
                    assert_eq!(t.insert(p, nh), reference.insert(p, nh));
                    agree4(&*t, &reference, &probes).unwrap();
                }
                for &(p, _) in routes.iter().rev().skip(1).step_by(2) {
                    assert_eq!(t.remove(p), reference.remove(p));
                    agree4(&*t, &reference, &probes).unwrap();
                }
            }

            #[test]
            fn withdraw_everything_leaves_nothing() {
                let routes: Routes4 = (0..200u32)
                    .map(|i| (Prefix4::new(i.wrapping_mul(0x9e37_79b9), (i % 33) as u8), NextHop(i % 7)))
                    .collect();
                let t = make(&routes);
                for (p, _) in &routes {
                    t.remove(*p).unwrap();
                }
                assert_eq!(t.route_count(), 0);
                for (p, _) in &routes {
                    assert_eq!(t.lookup(p.addr), None);
                }
            }

            #[test]
            fn updates_while_reading() {
                concurrent4(Arc::from(make(&[])), $churn);
            }
        }
    };
}

lpm4_suite!(dir24_8_built, |r| Box::new(
    Dir24_8::build(r, Dir24_8::DEFAULT_MEMORY_BOUND).unwrap()
));
lpm4_suite!(dir24_8_inserted, |r| {
    let t = Dir24_8::new();
    for &(p, nh) in r {
        t.insert(p, nh).unwrap();
    }
    Box::new(t)
});
lpm4_suite!(trie4, |r| Box::new(
    Trie4::build(r, Trie4::DEFAULT_MEMORY_BOUND).unwrap()
));
lpm4_suite!(naive4, |r| Box::new(Naive4::from_routes(r).unwrap()));
// At most 16 x 8 churn prefixes, so the table stays within its 256.
lpm4_suite!(
    linear4,
    |r| Box::new(Linear4::build(r, Linear4::MAX_MEMORY_BOUND).unwrap()),
    0x0000_0f00
);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// `Trie4::lookup_each`, the batch of many tables (virtual routers'
    /// packets): each address is answered from its own table, in batches
    /// that cross the lockstep chunk, whatever the others hold.
    #[test]
    fn trie4_lookup_each_answers_from_each_addresses_table(
        tables in prop::collection::vec(routes4(), 1..5),
        random in prop::collection::vec(any::<u32>(), 16),
        pick in prop::collection::vec(any::<u8>(), 1..200),
    ) {
        let tries: Vec<Trie4> = tables.iter().map(|r| Trie4::build(r, 1 << 20).unwrap()).collect();
        let naive: Vec<Naive4> = tables.iter().map(|r| Naive4::from_routes(r).unwrap()).collect();
        let probes: Vec<u32> = tables.iter().flat_map(|r| probes4(r, &random)).collect();
        let mut of = Vec::new();
        let mut addrs = Vec::new();
        for (k, &x) in pick.iter().enumerate() {
            of.push(usize::from(x) % tries.len());
            addrs.push(probes[(k * 7 + usize::from(x)) % probes.len()]);
        }
        let which: Vec<&Trie4> = of.iter().map(|&t| &tries[t]).collect();
        let mut out = vec![Some(NextHop(u32::MAX)); addrs.len()];
        Trie4::lookup_each(&which, &addrs, &mut out);
        for (i, &a) in addrs.iter().enumerate() {
            prop_assert_eq!(out[i], naive[of[i]].lookup(a), "{:#010x} in table {}", a, of[i]);
        }
    }
}

fn ip4(s: &str) -> u32 {
    s.parse::<std::net::Ipv4Addr>().unwrap().into()
}

fn pfx4(s: &str) -> Prefix4 {
    let (a, l) = s.split_once('/').unwrap();
    Prefix4::new(ip4(a), l.parse().unwrap())
}

/// The edge cases, on an empty table.
fn edges4(t: &dyn Lpm4Update) {
    let nh = NextHop;
    assert_eq!(t.lookup(0), None);
    assert_eq!(
        t.remove(pfx4("10.0.0.0/8")),
        Ok(None),
        "withdraw of a missing prefix"
    );
    // The default route covers everything, including both ends.
    assert_eq!(t.insert(pfx4("0.0.0.0/0"), nh(1)), Ok(None));
    for a in [0, u32::MAX, ip4("10.1.2.3")] {
        assert_eq!(t.lookup(a), Some(nh(1)));
    }
    // Host routes at both ends of the space.
    t.insert(pfx4("0.0.0.0/32"), nh(2)).unwrap();
    t.insert(pfx4("255.255.255.255/32"), nh(3)).unwrap();
    assert_eq!(t.lookup(0), Some(nh(2)));
    assert_eq!(t.lookup(1), Some(nh(1)));
    assert_eq!(t.lookup(u32::MAX), Some(nh(3)));
    assert_eq!(t.lookup(u32::MAX - 1), Some(nh(1)));
    // Overlapping: /8 > /16 > /24 > /25 > /32, inserted out of order.
    t.insert(pfx4("10.1.2.0/24"), nh(12)).unwrap();
    t.insert(pfx4("10.0.0.0/8"), nh(10)).unwrap();
    t.insert(pfx4("10.1.2.128/25"), nh(13)).unwrap();
    t.insert(pfx4("10.1.0.0/16"), nh(11)).unwrap();
    t.insert(pfx4("10.1.2.200/32"), nh(14)).unwrap();
    let check = |want: [u32; 6]| {
        let got = [
            "10.200.0.1",
            "10.1.200.1",
            "10.1.2.1",
            "10.1.2.129",
            "10.1.2.200",
            "10.1.2.201",
        ]
        .map(|a| t.lookup(ip4(a)).unwrap().0);
        assert_eq!(got, want, "{}", t.name());
    };
    check([10, 11, 12, 13, 14, 13]);
    // Withdraw of a covering prefix: the more specifics keep routing, the
    // space it alone covered falls back to the next covering prefix.
    assert_eq!(t.remove(pfx4("10.1.0.0/16")), Ok(Some(nh(11))));
    check([10, 10, 12, 13, 14, 13]);
    assert_eq!(t.remove(pfx4("10.1.2.128/25")), Ok(Some(nh(13))));
    check([10, 10, 12, 12, 14, 12]);
    // ... or to nothing when no prefix covers it any more (the default
    // route goes first).
    assert_eq!(t.remove(pfx4("0.0.0.0/0")), Ok(Some(nh(1))));
    assert_eq!(t.remove(pfx4("10.0.0.0/8")), Ok(Some(nh(10))));
    assert_eq!(t.lookup(ip4("10.200.0.1")), None);
    assert_eq!(t.lookup(ip4("10.1.2.1")), Some(nh(12)));
    assert_eq!(t.lookup(ip4("10.1.2.200")), Some(nh(14)));
    assert_eq!(t.lookup(ip4("11.0.0.0")), None);
    // Re-insert with a new next hop.
    assert_eq!(t.insert(pfx4("10.1.2.0/24"), nh(20)), Ok(Some(nh(12))));
    assert_eq!(t.lookup(ip4("10.1.2.1")), Some(nh(20)));
    assert_eq!(t.lookup(ip4("10.1.2.200")), Some(nh(14)));
    // Host bits in a given prefix are ignored.
    assert_eq!(
        t.remove(Prefix4 {
            addr: ip4("10.1.2.201"),
            len: 32
        }),
        Ok(None)
    );
    assert_eq!(t.remove(pfx4("10.1.2.200/32")), Ok(Some(nh(14))));
    // The largest next hop fits; one more is refused and changes nothing.
    t.insert(pfx4("192.0.2.0/24"), nh(NextHop::MAX)).unwrap();
    assert_eq!(t.lookup(ip4("192.0.2.7")), Some(nh(NextHop::MAX)));
    assert_eq!(
        t.insert(pfx4("198.51.100.0/24"), nh(NextHop::MAX + 1)),
        Err(LpmError::NextHopTooLarge {
            next_hop: NextHop::MAX + 1
        })
    );
    assert_eq!(t.lookup(ip4("198.51.100.1")), None);
    assert_eq!(t.route_count(), 4);
}

/// One writer applies a stream of updates while two readers look up
/// addresses whose answer is known to be one of one or two values through
/// the whole stream; readers must never see anything else (no `None`, no
/// third value).
/// Updates while two threads look up. The churn's random prefixes vary
/// in the bits of `churn` (a bounded table gets few enough of them).
fn concurrent4(t: Arc<dyn Lpm4Update>, churn: u32) {
    let nh = NextHop;
    t.insert(pfx4("10.1.2.0/24"), nh(1)).unwrap(); // stable
    t.insert(pfx4("10.9.0.0/16"), nh(2)).unwrap(); // covers the flipping /28
    t.insert(pfx4("10.1.3.0/24"), nh(4)).unwrap(); // next hop flips 4 <-> 5
    t.insert(pfx4("10.20.0.0/16"), nh(6)).unwrap(); // covers a /24 that comes and goes
    t.insert(pfx4("10.30.7.0/24"), nh(8)).unwrap(); // a /25 under it comes and goes
                                                    // (addresses, allowed answers)
    let watch: Vec<(u32, [u32; 2])> = vec![
        (ip4("10.1.2.1"), [1, 1]),
        (ip4("10.1.2.255"), [1, 1]),
        (ip4("10.9.9.20"), [2, 3]),
        (ip4("10.9.9.15"), [2, 2]),
        (ip4("10.1.3.77"), [4, 5]),
        (ip4("10.20.5.5"), [6, 7]),
        (ip4("10.20.6.5"), [6, 6]),
        (ip4("10.30.7.1"), [8, 9]),
        (ip4("10.30.7.200"), [8, 8]),
    ];
    let rounds: u32 = if cfg!(debug_assertions) {
        3_000
    } else {
        30_000
    };
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (t, done, watch) = (t.clone(), done.clone(), watch.clone());
            std::thread::spawn(move || {
                let addrs: Vec<u32> = watch.iter().map(|w| w.0).collect();
                let mut out = vec![None; addrs.len()];
                let mut seen = [0u64; 10];
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) || n < 1000 {
                    if (n + r).is_multiple_of(3) {
                        t.lookup_batch(&addrs, &mut out);
                    } else if (n + r) % 3 == 1 {
                        let mut raw = addrs.clone();
                        t.lookup_batch_raw(&mut raw);
                        for (o, &h) in out.iter_mut().zip(&raw) {
                            *o = (h != NO_ROUTE).then_some(NextHop(h));
                        }
                    } else {
                        for (o, &a) in out.iter_mut().zip(&addrs) {
                            *o = t.lookup(a);
                        }
                    }
                    for ((a, ok), got) in watch.iter().zip(&out) {
                        let v = got.map(|h| h.0);
                        assert!(
                            v == Some(ok[0]) || v == Some(ok[1]),
                            "{}: {a:#010x} gave {v:?}, expected one of {ok:?}",
                            t.name()
                        );
                        seen[v.unwrap() as usize] += 1;
                    }
                    n += 1;
                }
                seen
            })
        })
        .collect();
    // Unrelated churn reuses tbl8 groups and trie nodes constantly.
    let mut x = 0x1234_5678u32;
    for i in 0..rounds {
        let flip = i.is_multiple_of(2);
        if flip {
            t.insert(pfx4("10.9.9.16/28"), nh(3)).unwrap();
            t.insert(pfx4("10.20.5.0/24"), nh(7)).unwrap();
            t.insert(pfx4("10.30.7.0/25"), nh(9)).unwrap();
        } else {
            t.remove(pfx4("10.9.9.16/28")).unwrap();
            t.remove(pfx4("10.20.5.0/24")).unwrap();
            t.remove(pfx4("10.30.7.0/25")).unwrap();
        }
        t.insert(pfx4("10.1.3.0/24"), nh(if flip { 5 } else { 4 }))
            .unwrap();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let p = Prefix4::new(ip4("20.0.0.0") | (x & churn), 25 + (x % 8) as u8);
            if x & 1 == 0 {
                t.insert(p, nh(x % 16)).unwrap();
            } else {
                t.remove(p).unwrap();
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        let seen = r.join().expect("reader saw a wrong answer");
        assert!(seen[1] > 0 && seen[2] > 0 && seen[4] + seen[5] > 0);
    }
}

// ---------------------------------------------------------------- IPv6

fn len6() -> impl Strategy<Value = u8> {
    prop_oneof![
        1 => 0u8..=19,
        2 => 20u8..=32,
        4 => prop::sample::select(vec![20u8, 26, 29, 32, 36, 38, 40, 44, 46, 48, 50, 56, 64, 128]),
        2 => 33u8..=64,
        1 => 65u8..=128,
    ]
}

fn routes6() -> impl Strategy<Value = Routes6> {
    prop::collection::vec(any::<u128>(), 1..4).prop_flat_map(|bases| {
        let n = bases.len();
        prop::collection::vec((0..n, any::<u128>(), 0u32..128, len6(), 0u32..6), 0..48).prop_map(
            move |v| {
                v.into_iter()
                    .map(|(b, noise, bits, len, nh)| {
                        let flip = noise & (u128::MAX >> bits.max(1));
                        (Prefix6::new(bases[b] ^ flip, len), NextHop(nh))
                    })
                    .collect()
            },
        )
    })
}

fn probes6(routes: &[(Prefix6, NextHop)], random: &[u128]) -> Vec<u128> {
    let mut v = random.to_vec();
    v.extend([0, u128::MAX, 1 << 127, (1 << 127) - 1]);
    for (p, _) in routes {
        let last = p.addr | !Prefix6::mask(p.len);
        v.extend([
            p.addr,
            last,
            p.addr.wrapping_sub(1),
            last.wrapping_add(1),
            p.addr + (last - p.addr) / 2,
        ]);
    }
    v
}

fn agree6(t: &dyn Lpm6, reference: &Naive6, addrs: &[u128]) -> Result<(), TestCaseError> {
    let mut out = vec![Some(NextHop(u32::MAX)); addrs.len()];
    t.lookup_batch(addrs, &mut out);
    let mut raw = vec![0; addrs.len()];
    t.lookup_batch_raw(addrs, &mut raw);
    for (&a, &r) in addrs.iter().zip(&raw) {
        let want = reference.lookup(a).map_or(NO_ROUTE, |h| h.0);
        prop_assert_eq!(r, want, "{} raw batched lookup of {:#034x}", t.name(), a);
    }
    for (&a, &b) in addrs.iter().zip(&out) {
        let want = reference.lookup(a);
        prop_assert_eq!(
            t.lookup(a),
            want,
            "{} single lookup of {:#034x}",
            t.name(),
            a
        );
        prop_assert_eq!(b, want, "{} batched lookup of {:#034x}", t.name(), a);
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Op6 {
    Insert(Prefix6, NextHop),
    Remove(usize, Prefix6),
}

fn ops6() -> impl Strategy<Value = Vec<Op6>> {
    prop::collection::vec(
        prop_oneof![
            (any::<u128>(), len6(), 0u32..6)
                .prop_map(|(a, l, nh)| Op6::Insert(Prefix6::new(a, l), NextHop(nh))),
            (0usize..64, any::<u128>(), len6())
                .prop_map(|(i, a, l)| Op6::Remove(i, Prefix6::new(a, l))),
        ],
        0..24,
    )
}

macro_rules! lpm6_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            use super::*;

            fn make(routes: &[(Prefix6, NextHop)]) -> Box<dyn Lpm6Update> {
                let f: fn(&[(Prefix6, NextHop)]) -> Box<dyn Lpm6Update> = $make;
                f(routes)
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(128))]

                #[test]
                fn random_tables_agree(routes in routes6(), random in prop::collection::vec(any::<u128>(), 32)) {
                    let reference = Naive6::from_routes(&routes).unwrap();
                    let t = make(&routes);
                    prop_assert_eq!(t.route_count(), reference.route_count());
                    agree6(&*t, &reference, &probes6(&routes, &random))?;
                }

                #[test]
                fn random_updates_agree(routes in routes6(), ops in ops6(), random in prop::collection::vec(any::<u128>(), 16)) {
                    let reference = Naive6::from_routes(&routes).unwrap();
                    let t = make(&routes);
                    let mut touched = routes.clone();
                    for op in ops {
                        match op {
                            Op6::Insert(p, nh) => {
                                prop_assert_eq!(t.insert(p, nh), reference.insert(p, nh));
                                touched.push((p, nh));
                            }
                            Op6::Remove(i, other) => {
                                let p = routes.get(i).map_or(other, |r| r.0);
                                prop_assert_eq!(t.remove(p), reference.remove(p));
                            }
                        }
                        // Updates in the middle of a table, checked as they go.
                        agree6(&*t, &reference, &probes6(&touched[touched.len().saturating_sub(4)..], &[]))?;
                    }
                    prop_assert_eq!(t.route_count(), reference.route_count());
                    agree6(&*t, &reference, &probes6(&touched, &random))?;
                }
            }

            #[test]
            fn edges() {
                edges6(&*make(&[]));
            }

            #[test]
            fn updates_while_reading() {
                concurrent6(Arc::from(make(&[])));
            }
        }
    };
}

lpm6_suite!(poptrie6_built, |r| Box::new(
    Poptrie6::build(r, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap()
));
lpm6_suite!(poptrie6_inserted, |r| {
    let t = Poptrie6::new();
    for &(p, nh) in r {
        t.insert(p, nh).unwrap();
    }
    Box::new(t)
});
lpm6_suite!(naive6, |r| Box::new(Naive6::from_routes(r).unwrap()));

fn ip6(s: &str) -> u128 {
    s.parse::<std::net::Ipv6Addr>().unwrap().into()
}

fn pfx6(s: &str) -> Prefix6 {
    let (a, l) = s.split_once('/').unwrap();
    Prefix6::new(ip6(a), l.parse().unwrap())
}

fn edges6(t: &dyn Lpm6Update) {
    let nh = NextHop;
    assert_eq!(t.lookup(0), None);
    assert_eq!(t.remove(pfx6("2001:db8::/32")), Ok(None));
    t.insert(pfx6("::/0"), nh(1)).unwrap();
    assert_eq!(t.lookup(0), Some(nh(1)));
    assert_eq!(t.lookup(u128::MAX), Some(nh(1)));
    t.insert(pfx6("::/128"), nh(2)).unwrap();
    t.insert(pfx6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"), nh(3))
        .unwrap();
    assert_eq!(t.lookup(0), Some(nh(2)));
    assert_eq!(t.lookup(1), Some(nh(1)));
    assert_eq!(t.lookup(u128::MAX), Some(nh(3)));
    assert_eq!(t.lookup(u128::MAX - 1), Some(nh(1)));
    // Nested at, inside and across the trie's level boundaries.
    t.insert(pfx6("2001:db8::/32"), nh(10)).unwrap();
    t.insert(pfx6("2001::/16"), nh(9)).unwrap();
    t.insert(pfx6("2001:db8:1::/48"), nh(11)).unwrap();
    t.insert(pfx6("2001:db8:1:8000::/49"), nh(12)).unwrap();
    t.insert(pfx6("2001:db8:1:8000::1/128"), nh(13)).unwrap();
    let check = |want: [u32; 6]| {
        let got = [
            "2001:1::1",
            "2001:db8:2::1",
            "2001:db8:1::1",
            "2001:db8:1:8000::2",
            "2001:db8:1:8000::1",
            "2001:db8:1:ffff::1",
        ]
        .map(|a| t.lookup(ip6(a)).unwrap().0);
        assert_eq!(got, want, "{}", t.name());
    };
    check([9, 10, 11, 12, 13, 12]);
    assert_eq!(t.remove(pfx6("2001:db8::/32")), Ok(Some(nh(10))));
    check([9, 9, 11, 12, 13, 12]);
    assert_eq!(t.remove(pfx6("2001:db8:1:8000::/49")), Ok(Some(nh(12))));
    check([9, 9, 11, 11, 13, 11]);
    assert_eq!(t.remove(pfx6("::/0")), Ok(Some(nh(1))));
    assert_eq!(t.remove(pfx6("2001::/16")), Ok(Some(nh(9))));
    assert_eq!(t.lookup(ip6("2001:1::1")), None);
    assert_eq!(t.lookup(ip6("2001:db8:1::1")), Some(nh(11)));
    assert_eq!(t.insert(pfx6("2001:db8:1::/48"), nh(20)), Ok(Some(nh(11))));
    assert_eq!(t.lookup(ip6("2001:db8:1::1")), Some(nh(20)));
    assert_eq!(t.lookup(ip6("2001:db8:1:8000::1")), Some(nh(13)));
    assert_eq!(
        t.insert(pfx6("2001:db8:2::/48"), nh(NextHop::MAX + 1)),
        Err(LpmError::NextHopTooLarge {
            next_hop: NextHop::MAX + 1
        })
    );
    t.insert(pfx6("2001:db8:3::/48"), nh(NextHop::MAX)).unwrap();
    assert_eq!(t.lookup(ip6("2001:db8:3::9")), Some(nh(NextHop::MAX)));
    assert_eq!(t.route_count(), 5);
}

fn concurrent6(t: Arc<dyn Lpm6Update>) {
    let nh = NextHop;
    t.insert(pfx6("2001:db8:1::/48"), nh(1)).unwrap();
    t.insert(pfx6("2001:db8::/32"), nh(2)).unwrap();
    t.insert(pfx6("2a00:1::/32"), nh(4)).unwrap();
    t.insert(pfx6("2400::/12"), nh(6)).unwrap();
    let watch: Vec<(u128, [u32; 2])> = vec![
        (ip6("2001:db8:1::1"), [1, 1]),
        (ip6("2001:db8:9:1::1"), [2, 3]),
        // Repeated, as in a burst of one flow.
        (ip6("2001:db8:9:1::1"), [2, 3]),
        (ip6("2001:db8:a::1"), [2, 2]),
        (ip6("2001:db8:a::1"), [2, 2]),
        (ip6("2a00:1::1"), [4, 5]),
        (ip6("2400:1::1"), [6, 7]),
        (ip6("2401::1"), [6, 6]),
    ];
    let rounds: u32 = if cfg!(debug_assertions) {
        2_000
    } else {
        20_000
    };
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (t, done, watch) = (t.clone(), done.clone(), watch.clone());
            std::thread::spawn(move || {
                let addrs: Vec<u128> = watch.iter().map(|w| w.0).collect();
                let mut out = vec![None; addrs.len()];
                let mut seen = [0u64; 8];
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) || n < 1000 {
                    if (n + r).is_multiple_of(3) {
                        t.lookup_batch(&addrs, &mut out);
                    } else if (n + r) % 3 == 1 {
                        let mut raw = vec![0; addrs.len()];
                        t.lookup_batch_raw(&addrs, &mut raw);
                        for (o, &h) in out.iter_mut().zip(&raw) {
                            *o = (h != NO_ROUTE).then_some(NextHop(h));
                        }
                    } else {
                        for (o, &a) in out.iter_mut().zip(&addrs) {
                            *o = t.lookup(a);
                        }
                    }
                    for ((a, ok), got) in watch.iter().zip(&out) {
                        let v = got.map(|h| h.0);
                        assert!(
                            v == Some(ok[0]) || v == Some(ok[1]),
                            "{}: {a:#034x} gave {v:?}, expected one of {ok:?}",
                            t.name()
                        );
                        seen[v.unwrap() as usize] += 1;
                    }
                    n += 1;
                }
                seen
            })
        })
        .collect();
    let mut x = 0x1234_5678_9abc_def0u64;
    for i in 0..rounds {
        let flip = i.is_multiple_of(2);
        if flip {
            t.insert(pfx6("2001:db8:9::/48"), nh(3)).unwrap();
            t.insert(pfx6("2400::/16"), nh(7)).unwrap();
        } else {
            t.remove(pfx6("2001:db8:9::/48")).unwrap();
            t.remove(pfx6("2400::/16")).unwrap();
        }
        t.insert(pfx6("2a00:1::/32"), nh(if flip { 5 } else { 4 }))
            .unwrap();
        for _ in 0..4 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Churn next to the watched prefixes, in the same /20 nodes.
            let base = if x & 2 == 0 {
                ip6("2001:db8::")
            } else {
                ip6("2a00::")
            };
            let p = Prefix6::new(
                base | ((x as u128 >> 4) << 64 & 0x0000_0000_ffff_ffff << 64),
                44 + (x % 21) as u8,
            );
            if p.contains(ip6("2001:db8:1::1"))
                || p.contains(ip6("2001:db8:9::"))
                || p.contains(ip6("2a00:1::1"))
            {
                continue;
            }
            if x & 1 == 0 {
                t.insert(p, nh((x % 16) as u32 + 10)).unwrap();
            } else {
                t.remove(p).unwrap();
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        let seen = r.join().expect("reader saw a wrong answer");
        assert!(seen[1] > 0 && seen[2] > 0 && seen[4] + seen[5] > 0);
    }
}
