use super::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn tuple(n: u32) -> FiveTuple {
    FiveTuple {
        src: Ipv4Addr::from(0x0a00_0000 | n),
        dst: Ipv4Addr::new(192, 0, 2, 1),
        sport: (n % 60000) as u16 + 1024,
        dport: 80,
        proto: 6,
    }
}

fn spec(key: FlowKey) -> FlowSpec {
    FlowSpec {
        key,
        rate: 64_000,
        next_hop: Some(Ipv4Addr::new(10, 9, 8, 7)),
        output: 3,
    }
}

#[test]
fn tags_index_the_array() {
    let t = FlowTable::tag(16);
    assert_eq!(t.lookup_tag(5), None);
    assert_eq!(t.add(&spec(FlowKey::Tag(5))), Ok(5));
    assert_eq!(t.lookup_tag(5), Some(5));
    assert_eq!(t.lookup_tag(6), None);
    assert_eq!(
        t.route(5),
        Route {
            next_hop: Some(Ipv4Addr::new(10, 9, 8, 7)),
            output: 3
        }
    );
    assert_eq!(t.rate(5), 64_000);
    assert_eq!(
        t.add(&spec(FlowKey::Tag(5))),
        Err(FlowError::Duplicate(FlowKey::Tag(5)))
    );
    // Beyond the array: refused and counted as full.
    assert_eq!(
        t.add(&spec(FlowKey::Tag(16))),
        Err(FlowError::Full(FlowKey::Tag(16)))
    );
    assert_eq!(t.lookup_tag(16), None);
    assert_eq!(t.lookup_tag(u32::MAX), None);
    assert!(matches!(
        t.add(&spec(FlowKey::Tuple(tuple(1)))),
        Err(FlowError::WrongKind(_, Mode::Tag))
    ));
    t.remove(&FlowKey::Tag(5)).unwrap();
    assert_eq!(t.lookup_tag(5), None);
    assert_eq!(
        t.remove(&FlowKey::Tag(5)),
        Err(FlowError::NotFound(FlowKey::Tag(5)))
    );
    let c = t.counters();
    assert_eq!(
        c,
        TableCounters {
            flows: 0,
            adds: 1,
            removes: 1,
            rejected_full: 1,
            rejected_chain: 0,
            slow_lookups: 0
        }
    );
}

#[test]
fn impossible_rates_are_refused() {
    let t = FlowTable::tag(4);
    let mut s = spec(FlowKey::Tag(1));
    s.rate = 0;
    assert_eq!(t.add(&s), Err(FlowError::Rate(0)));
    s.rate = MAX_RATE_BPS + 1;
    assert!(t.add(&s).is_err());
    s.rate = MAX_RATE_BPS;
    assert!(t.add(&s).is_ok());
}

#[test]
fn chains_hold_k_and_refuse_the_next() {
    // One bucket: every flow lands on it.
    let t = FlowTable::matching(100, 4, 1, 7);
    for n in 0..4 {
        t.add(&spec(FlowKey::Tuple(tuple(n)))).unwrap();
    }
    for n in 0..4 {
        let f = t.lookup_tuple(&tuple(n));
        assert!(f.index.is_some(), "{n}");
        // Newest first: flow n sits at depth 4 - n.
        assert_eq!(f.probes, 4 - n);
    }
    assert_eq!(
        t.add(&spec(FlowKey::Tuple(tuple(4)))),
        Err(FlowError::Chain(FlowKey::Tuple(tuple(4)), 4))
    );
    // An unknown flow reads the whole chain, never more than k.
    assert_eq!(
        t.lookup_tuple(&tuple(99)),
        Found {
            index: None,
            probes: 4
        }
    );
    assert_eq!(t.counters().rejected_chain, 1);
    // Removing one from the middle makes room.
    t.remove(&FlowKey::Tuple(tuple(2))).unwrap();
    assert_eq!(t.lookup_tuple(&tuple(2)).index, None);
    for n in [0, 1, 3] {
        assert!(t.lookup_tuple(&tuple(n)).index.is_some());
    }
    t.add(&spec(FlowKey::Tuple(tuple(4)))).unwrap();
    assert!(t.lookup_tuple(&tuple(4)).index.is_some());
}

#[test]
fn a_full_table_refuses_and_counts() {
    let t = FlowTable::matching(3, 8, 64, 1);
    for n in 0..3 {
        t.add(&spec(FlowKey::Tuple(tuple(n)))).unwrap();
    }
    assert_eq!(
        t.add(&spec(FlowKey::Tuple(tuple(3)))),
        Err(FlowError::Full(FlowKey::Tuple(tuple(3))))
    );
    assert_eq!(t.counters().rejected_full, 1);
    assert_eq!(t.counters().flows, 3);
    assert!(matches!(
        t.add(&spec(FlowKey::Tag(1))),
        Err(FlowError::WrongKind(_, Mode::Match))
    ));
}

#[test]
fn meters_and_virtual_clock_deadlines() {
    let t = FlowTable::tag(4);
    let mut s = spec(FlowKey::Tag(2));
    s.rate = 8_000; // 1 byte per ms
    t.add(&s).unwrap();
    t.meter(2, 100);
    t.meter(2, 50);
    // 100 bytes at 1 byte/ms: 100 ms after now.
    assert_eq!(t.stamp_deadline(2, 1_000, 100), Some(1_000 + 100_000_000));
    // Back to back: from the last deadline, not from now.
    assert_eq!(t.stamp_deadline(2, 2_000, 10), Some(110_001_000));
    // Idle flow: from now.
    assert_eq!(t.stamp_deadline(2, 500_000_000, 1), Some(501_000_000));
    let m = t.meters(2);
    assert_eq!((m.packets, m.bytes, m.deadline), (2, 150, 501_000_000));
    assert_eq!(t.stamp_deadline(9, 0, 1), None);
    // A transmission time that is not a whole number of ns rounds up,
    // as in deadline::virtual_clock: 1 byte at 3 bit/s is 2,666,666,666.67 ns.
    let mut odd = spec(FlowKey::Tag(3));
    odd.rate = 3;
    t.add(&odd).unwrap();
    assert_eq!(t.stamp_deadline(3, 10, 1), Some(10 + 2_666_666_667));
    assert_eq!(
        t.stamp_deadline(3, 10, 1),
        Some(crate::deadline::virtual_clock(10, 10 + 2_666_666_667, 1, 3))
    );
    // A new flow on the same tag starts afresh.
    t.remove(&FlowKey::Tag(2)).unwrap();
    t.add(&s).unwrap();
    assert_eq!(t.meters(2), Meters::default());
}

#[test]
fn listing_gives_back_what_was_added() {
    let t = FlowTable::matching(8, 2, 0, 3);
    let mut a = spec(FlowKey::Tuple(tuple(1)));
    a.next_hop = None;
    a.output = 65535;
    let b = spec(FlowKey::Tuple(FiveTuple {
        src: Ipv4Addr::new(255, 255, 255, 255),
        dst: Ipv4Addr::new(0, 0, 0, 0),
        sport: 65535,
        dport: 0,
        proto: 255,
    }));
    t.add(&a).unwrap();
    t.add(&b).unwrap();
    let mut listed: Vec<FlowSpec> = t.flows().into_iter().map(|(_, s)| s).collect();
    listed.sort_by_key(|s| s.output);
    assert_eq!(listed, vec![b, a]);
}

#[test]
fn every_bucket_is_used() {
    // The hash spreads flows: 4096 flows over 4096 buckets fill well over
    // half of them (1 - 1/e of them for a uniform hash).
    let t = FlowTable::matching(4096, 8, 0, 42);
    let mut used = vec![false; t.buckets()];
    for n in 0..4096 {
        used[t.bucket_of_tuple(&tuple(n))] = true;
    }
    let n = used.iter().filter(|u| **u).count();
    assert!(n > 2400, "{n}");
}

#[derive(Debug, Clone)]
enum Op {
    Add(u32),
    Remove(u32),
    Look(u32),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            (0u32..40).prop_map(Op::Add),
            (0u32..40).prop_map(Op::Remove),
            (0u32..40).prop_map(Op::Look),
        ],
        0..300,
    )
}

proptest! {
    /// The match table against a HashMap model: same answers, the chain
    /// bound and the capacity respected, counters consistent.
    #[test]
    fn match_table_follows_a_model(ops in ops(), k in 1u32..5, buckets in 1u32..9, cap in 1u32..30) {
        let t = FlowTable::matching(cap, k, buckets, 99);
        let mut model: HashMap<FiveTuple, u32> = HashMap::new();
        let mut per_bucket: HashMap<usize, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Add(n) => {
                    let f = tuple(n);
                    let b = t.bucket_of_tuple(&f);
                    let r = t.add(&spec(FlowKey::Tuple(f)));
                    if model.contains_key(&f) {
                        prop_assert_eq!(r, Err(FlowError::Duplicate(FlowKey::Tuple(f))));
                    } else if per_bucket.get(&b).copied().unwrap_or(0) >= k {
                        prop_assert_eq!(r, Err(FlowError::Chain(FlowKey::Tuple(f), k)));
                    } else if model.len() as u32 >= cap {
                        prop_assert_eq!(r, Err(FlowError::Full(FlowKey::Tuple(f))));
                    } else {
                        let i = r.unwrap();
                        prop_assert!(i < cap);
                        prop_assert!(!model.values().any(|&j| j == i), "record reused while live");
                        model.insert(f, i);
                        *per_bucket.entry(b).or_default() += 1;
                    }
                }
                Op::Remove(n) => {
                    let f = tuple(n);
                    let r = t.remove(&FlowKey::Tuple(f));
                    if model.remove(&f).is_some() {
                        prop_assert_eq!(r, Ok(()));
                        *per_bucket.get_mut(&t.bucket_of_tuple(&f)).unwrap() -= 1;
                    } else {
                        prop_assert_eq!(r, Err(FlowError::NotFound(FlowKey::Tuple(f))));
                    }
                }
                Op::Look(n) => {
                    let f = tuple(n);
                    let got = t.lookup_tuple(&f);
                    prop_assert_eq!(got.index, model.get(&f).copied());
                    prop_assert!(got.probes <= k);
                }
            }
            prop_assert_eq!(t.counters().flows, model.len() as u64);
        }
    }

    /// The tag table against a model.
    #[test]
    fn tag_table_follows_a_model(ops in ops(), cap in 1u32..50) {
        let t = FlowTable::tag(cap);
        let mut model = std::collections::HashSet::new();
        for op in ops {
            match op {
                Op::Add(n) => {
                    let r = t.add(&spec(FlowKey::Tag(n)));
                    if n >= cap {
                        prop_assert_eq!(r, Err(FlowError::Full(FlowKey::Tag(n))));
                    } else if !model.insert(n) {
                        prop_assert_eq!(r, Err(FlowError::Duplicate(FlowKey::Tag(n))));
                    } else {
                        prop_assert_eq!(r, Ok(n));
                    }
                }
                Op::Remove(n) => {
                    prop_assert_eq!(t.remove(&FlowKey::Tag(n)).is_ok(), model.remove(&n));
                }
                Op::Look(n) => {
                    prop_assert_eq!(t.lookup_tag(n), model.contains(&n).then_some(n));
                }
            }
        }
    }
}

/// Readers on two threads never miss a flow that stays in the table while
/// a writer adds and removes other flows of the same buckets as fast as
/// it can (records are unlinked and reused all the time).
#[test]
fn readers_never_miss_a_stable_flow_during_churn() {
    let t = Arc::new(FlowTable::matching(64, 8, 2, 5));
    let stable: Vec<FiveTuple> = (0..4).map(tuple).collect();
    for f in &stable {
        t.add(&spec(FlowKey::Tuple(*f))).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (t, stop, stable) = (t.clone(), stop.clone(), stable.clone());
            std::thread::spawn(move || {
                let mut looks = 0u64;
                let mut ghosts = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for f in &stable {
                        assert!(t.lookup_tuple(f).index.is_some(), "lost {f:?}");
                        looks += 1;
                    }
                    // Churned flows are found or not; a found record is
                    // in the table (its route is read after the lookup,
                    // so a reuse in between is possible: see the module
                    // documentation).
                    if let Some(i) = t.lookup_tuple(&tuple(1000)).index {
                        ghosts += u64::from(i >= t.capacity());
                    }
                }
                (looks, ghosts)
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    let mut rounds = 0u32;
    while std::time::Instant::now() < deadline && rounds < 200_000 {
        for n in 1000..1008 {
            let mut s = spec(FlowKey::Tuple(tuple(n)));
            s.output = (n % 7) as u16;
            let _ = t.add(&s);
        }
        for n in 1000..1008 {
            let _ = t.remove(&FlowKey::Tuple(tuple(n)));
        }
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let (looks, ghosts) = r.join().unwrap();
        assert!(looks > 0);
        assert_eq!(ghosts, 0);
    }
    assert!(rounds > 10, "{rounds}");
    assert_eq!(t.counters().flows, 4);
}
