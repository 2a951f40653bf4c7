//! Hot swap: a running graph replaced by a new one between two rounds,
//! the new elements taking the state of the old ones of the same name and
//! class.

use bricks_config::{parse, Source, SourceMap};
use bricks_runtime::{Engine, Plan, WorkerOptions, Workers};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn router(text: &str) -> Result<bricks_config::Router, String> {
    let mut map = SourceMap::default();
    parse(
        &mut map,
        Source {
            name: "<t>".into(),
            text: text.into(),
        },
    )
    .map_err(|d| format!("{d:?}"))
}

fn plan(text: &str) -> Plan {
    bricks_runtime::build(&router(text).unwrap(), &bricks_elements::registry()).unwrap()
}

fn beside(text: &str, old: &Plan) -> Result<Plan, String> {
    bricks_runtime::build_hotswap(
        &router(text)?,
        &bricks_elements::registry(),
        Default::default(),
        old,
    )
    .map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })
}

fn count(e: &Engine, element: &str, counter: &str) -> u64 {
    e.collect_stats()
        .iter()
        .find(|s| s.name == element)
        .and_then(|s| s.stats.get(counter))
        .unwrap_or(0)
}

/// Runs a graph by hand until nothing moves.
fn settle(e: &mut Engine) {
    for _ in 0..1000 {
        if !e.step() {
            return;
        }
    }
}

#[test]
fn packets_in_a_queue_survive_and_counters_continue() {
    // Nothing pulls from the queue: after the source's 50 packets it
    // holds them all.
    let old = plan(
        "src :: InfiniteSource(LIMIT 50) -> c :: Counter -> q :: Queue(100) \
         -> d :: Discard(ACTIVE false);",
    );
    let mut e = Engine::new(&old).unwrap();
    e.start();
    settle(&mut e);
    assert_eq!(count(&e, "q", "length"), 50);
    assert_eq!(count(&e, "c", "count"), 50);
    // The new configuration has no source and drains the queue.
    let new = beside(
        "Idle -> c :: Counter -> q :: Queue(100) -> d :: Discard; \
         src2 :: InfiniteSource(LIMIT 10) -> c2 :: Counter -> d2 :: Discard;",
        &old,
    )
    .unwrap();
    e.adopt(Engine::new(&new).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "d", "count"), 50, "the queued packets got out");
    assert_eq!(count(&e, "q", "enqueued"), 50);
    assert_eq!(count(&e, "q", "length"), 0);
    assert_eq!(count(&e, "c", "count"), 50, "the counter kept its count");
    assert_eq!(count(&e, "c2", "count"), 10);
    // A third configuration: the counter goes on counting from 50.
    let third = beside(
        "src3 :: InfiniteSource(LIMIT 7) -> c :: Counter -> d :: Discard;",
        &new,
    )
    .unwrap();
    e.adopt(Engine::new(&third).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "c", "count"), 57);
    assert_eq!(count(&e, "d", "count"), 57, "Discard's count continues too");
}

#[test]
fn a_smaller_queue_keeps_what_fits_and_counts_the_rest() {
    let old = plan("InfiniteSource(LIMIT 40) -> q :: Queue(100) -> Discard(ACTIVE false);");
    let mut e = Engine::new(&old).unwrap();
    e.start();
    settle(&mut e);
    let new = beside("Idle -> q :: Queue(30) -> d :: Discard;", &old).unwrap();
    e.adopt(Engine::new(&new).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "d", "count"), 30);
    assert_eq!(count(&e, "q", "drops"), 10);
}

#[test]
fn another_class_of_the_same_name_takes_nothing() {
    let old = plan(
        "InfiniteSource(LIMIT 20) -> c :: Counter -> q :: Queue(100) -> Discard(ACTIVE false);",
    );
    let mut e = Engine::new(&old).unwrap();
    e.start();
    settle(&mut e);
    let new = beside(
        "Idle -> c :: AverageCounter -> q :: FrontDropQueue(100) -> d :: Discard;",
        &old,
    )
    .unwrap();
    e.adopt(Engine::new(&new).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "c", "count"), 0);
    assert_eq!(
        count(&e, "d", "count"),
        0,
        "a FrontDropQueue is not a Queue"
    );
}

#[test]
fn unchanged_tables_are_the_same_table() {
    let text = "Idle -> rt :: RadixIPLookup(10.0.0.0/8 0) -> Discard;";
    let old = plan(text);
    let mut e = Engine::new(&old).unwrap();
    e.start();
    e.write_handler("rt", "add", "192.168.0.0/16 0").unwrap();
    assert_eq!(count(&e, "rt", "routes"), 2);
    // Same arguments: the table with the route added while running.
    let same = beside(text, &old).unwrap();
    e.adopt(Engine::new(&same).unwrap());
    assert_eq!(count(&e, "rt", "routes"), 2);
    // Changed arguments: the new configuration's routes.
    let changed = beside(
        "Idle -> rt :: RadixIPLookup(10.0.0.0/8 0, 172.16.0.0/12 0, 0.0.0.0/0 0) -> Discard;",
        &same,
    )
    .unwrap();
    e.adopt(Engine::new(&changed).unwrap());
    assert_eq!(count(&e, "rt", "routes"), 3);
}

#[test]
fn a_failing_configuration_leaves_the_old_one_running() {
    let old = Arc::new(plan(
        "InfiniteSource -> c :: Counter -> q :: ThreadSafeQueue(1000) -> Unqueue -> Discard;",
    ));
    let opts = WorkerOptions {
        threads: 2,
        pin: false,
        publish_every: Some(Duration::from_millis(5)),
        max_nap: Duration::from_micros(50),
        ..Default::default()
    };
    let w = Workers::start(old.clone(), &opts).unwrap();
    let live_count = |w: &Workers, name: &str| -> u64 {
        w.live()
            .iter()
            .flat_map(|s| s.iter())
            .filter(|e| e.name == name)
            .filter_map(|e| e.stats.get("count"))
            .sum()
    };
    let wait_past = |w: &Workers, name: &str, n: u64| {
        let t0 = Instant::now();
        while live_count(w, name) <= n && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        live_count(w, name)
    };
    let before = wait_past(&w, "c", 0);
    assert!(before > 0);
    // A configuration that does not check changes nothing.
    let bad = beside(
        "InfiniteSource -> c :: Counter -> NoSuchClass -> Discard;",
        &old,
    );
    assert!(bad.unwrap_err().contains("NoSuchClass"));
    let bad = beside("InfiniteSource -> c :: Counter(BOGUS 1) -> Discard;", &old);
    assert!(bad.is_err());
    assert!(
        wait_past(&w, "c", before) > before,
        "the old graph still runs"
    );
    // A good one switches every worker; the counter continues.
    let new = beside(
        "InfiniteSource -> c :: Counter -> c2 :: Counter -> q :: ThreadSafeQueue(1000) \
         -> Unqueue -> Discard;",
        &old,
    )
    .unwrap();
    let at_swap = live_count(&w, "c");
    w.control().hotswap(&new).unwrap();
    let c2 = wait_past(&w, "c2", 0);
    assert!(c2 > 0, "the new graph runs");
    w.stop_handle().stop();
    let s = w.join();
    let c = s.total.stats("c").unwrap().get("count").unwrap();
    let c2 = s.total.stats("c2").unwrap().get("count").unwrap();
    assert!(c >= at_swap + c2, "c={c} at_swap={at_swap} c2={c2}");
    assert!(s.total.errors.is_empty(), "{:?}", s.total.errors);
}

/// The IPv6 advertisers do not announce again what a swap did not change,
/// and announce at once what it did.
#[test]
fn ipv6_advertisements_are_not_repeated_by_a_swap() {
    let conf = |prefix: &str| {
        format!(
            "Idle -> ra :: IP6RouterAdvertiser(52:54:00:aa:00:01, PREFIX {prefix}) \
                -> c :: Counter -> Discard; \
             Idle -> nda :: IP6NDAdvertiser(2001:db8::1 52:54:00:aa:00:01) \
                -> c2 :: Counter -> Discard;"
        )
    };
    let old = plan(&conf("2001:db8::/64"));
    let mut e = Engine::new(&old).unwrap();
    e.start();
    settle(&mut e);
    // One Router Advertisement and the first unsolicited Neighbor
    // Advertisement at start (the next ones a second later).
    assert_eq!(count(&e, "c", "count"), 1);
    assert_eq!(count(&e, "c2", "count"), 1);
    let same = beside(&conf("2001:db8::/64"), &old).unwrap();
    e.adopt(Engine::new(&same).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "c", "count"), 1, "the same advertisement again");
    assert_eq!(count(&e, "c2", "count"), 1, "the first round again");
    assert_eq!(count(&e, "ra", "advertisements"), 1);
    assert_eq!(count(&e, "nda", "unsolicited"), 1);
    // Another prefix: advertised at once.
    let other = beside(&conf("2001:db8:5::/64"), &same).unwrap();
    e.adopt(Engine::new(&other).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "c", "count"), 2);
    assert_eq!(count(&e, "ra", "advertisements"), 2);
}

/// A swap to a configuration without the router advertiser is the
/// interface ceasing to advertise (RFC 4861 section 6.2.5): the final
/// advertisement, router lifetime 0, goes into the queue the new
/// configuration keeps and leaves from there.
#[test]
fn a_swap_that_drops_the_router_advertiser_sends_its_final_advertisement() {
    let old = plan(
        "Idle -> ra :: IP6RouterAdvertiser(52:54:00:aa:00:01, PREFIX 2001:db8::/64) -> q; \
         q :: Queue -> Unqueue -> c :: Counter -> Discard;",
    );
    let mut e = Engine::new(&old).unwrap();
    e.start();
    settle(&mut e);
    assert_eq!(count(&e, "c", "count"), 1);
    // The new one counts advertisements with router lifetime 0 (bytes 60
    // and 61 of the frame).
    let without = "Idle -> q :: Queue -> Unqueue -> c :: Counter -> cl :: Classifier(60/0000, -); \
        cl[0] -> zero :: Counter -> Discard; cl[1] -> Discard;";
    let new = beside(without, &old).unwrap();
    e.adopt(Engine::new(&new).unwrap());
    settle(&mut e);
    // The counter goes on from 1.
    assert_eq!(count(&e, "c", "count"), 2, "one packet after the swap");
    assert_eq!(count(&e, "zero", "count"), 1, "router lifetime 0");
    // Kept: a swap to the same configuration sends nothing more.
    let same = beside(without, &new).unwrap();
    e.adopt(Engine::new(&same).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "c", "count"), 2);
}

#[test]
fn arp_entries_carry_over() {
    let conf = |extra: &str| {
        format!(
            "Idle -> arpq :: ARPQuerier(10.0.0.1/24, 02:00:00:00:00:01{extra}) -> Discard; \
             Idle -> [1]arpq;"
        )
    };
    let old = plan(&conf(""));
    let mut e = Engine::new(&old).unwrap();
    e.start();
    e.write_handler("arpq", "insert", "10.0.0.5 02:00:00:00:00:05")
        .unwrap();
    let table = |e: &Engine| e.read_handler("arpq", "table").unwrap().into_text();
    assert!(
        table(&e).contains("10.0.0.5 1 02-00-00-00-00-05"),
        "{}",
        table(&e)
    );
    // The same arguments: the same table.
    let same = beside(&conf(""), &old).unwrap();
    e.adopt(Engine::new(&same).unwrap());
    assert!(
        table(&e).contains("10.0.0.5 1 02-00-00-00-00-05"),
        "{}",
        table(&e)
    );
    // Other arguments: a new table, with the entries copied.
    let other = beside(&conf(", TIMEOUT 10s"), &same).unwrap();
    e.adopt(Engine::new(&other).unwrap());
    assert!(
        table(&e).contains("10.0.0.5 1 02-00-00-00-00-05"),
        "{}",
        table(&e)
    );
    // Another subnet does not learn what is outside it.
    let elsewhere = beside(
        "Idle -> arpq :: ARPQuerier(10.9.0.1/24, 02:00:00:00:00:01) -> Discard; \
         Idle -> [1]arpq;",
        &other,
    )
    .unwrap();
    e.adopt(Engine::new(&elsewhere).unwrap());
    assert!(!table(&e).contains("10.0.0.5"), "{}", table(&e));
}

#[test]
fn a_capture_being_written_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.pcap");
    let conf = |limit: u32| {
        format!(
            "InfiniteSource(LIMIT {limit}, LENGTH 60) -> d :: ToDump({})",
            file.display()
        )
    };
    let old = plan(&conf(5));
    let mut e = Engine::new(&old).unwrap();
    e.start();
    settle(&mut e);
    let new = beside(&conf(3), &old).unwrap();
    e.adopt(Engine::new(&new).unwrap());
    settle(&mut e);
    assert_eq!(count(&e, "d", "count"), 8);
    e.shutdown();
    drop(e);
    // A pcap header, then 8 records of 16 + 60 bytes.
    let len = std::fs::metadata(&file).unwrap().len();
    assert_eq!(len, 24 + 8 * (16 + 60));
}
