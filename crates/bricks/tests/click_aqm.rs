//! Click's queue-management elements CoDel and AdaptiveRED in whole
//! configurations run by the `bricks` binary in simulated time: a source
//! faster than the link behind a Queue, the element keeping the queue
//! short, and its handlers read at exit.

use std::process::{Command, Output};

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("bricks runs")
}

/// Runs `config` in simulated time to its end and reads `handlers`
/// there: their values, in order, and the lines the configuration printed
/// that start with `len ` (a Script sampling a queue), without it.
fn run_sampled(config: &str, handlers: &[&str]) -> (Vec<String>, Vec<u64>) {
    let mut args = vec!["run", "--quiet", "--simtime", "-e", config];
    for h in handlers {
        args.extend(["-h", h]);
    }
    let o = bricks(&args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{config}:\n{err}");
    let samples = out
        .lines()
        .filter_map(|l| l.strip_prefix("len "))
        .map(num)
        .collect();
    let out: String = out
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("len "))
        .collect();
    if handlers.len() == 1 {
        return (
            vec![out.strip_suffix('\n').unwrap_or(&out).to_string()],
            samples,
        );
    }
    // Each value follows an `element.handler:` line and ends with a
    // blank line.
    let mut values = Vec::new();
    for h in handlers {
        let head = format!("{h}:\n");
        let at = out.find(&head).unwrap_or_else(|| panic!("{h} in {out}")) + head.len();
        let end = if out[at..].starts_with('\n') {
            at
        } else {
            out[at..].find("\n\n").map_or(out.len(), |e| at + e)
        };
        values.push(out[at..end].to_string());
    }
    (values, samples)
}

/// [`run_sampled`] without samples.
fn run(config: &str, handlers: &[&str]) -> Vec<String> {
    run_sampled(config, handlers).0
}

fn num(s: &str) -> u64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

/// `rate` packets a second, stamped, into a Queue that a 1000-packet
/// link empties through CoDel: `secs` seconds of it, the queue's length
/// printed every 0.1 s.
fn codel_config(rate: u64, secs: u64, codel: &str) -> String {
    format!(
        "RatedSource(RATE {rate}, LIMIT {}, STOP true) -> SetTimestamp -> q :: Queue(5000) \
         -> c :: {codel} -> RatedUnqueue(1000) -> d :: Counter -> Discard; \
         Script(label x, print \"len $(q.length)\", wait 0.1s, goto x);",
        rate * secs
    )
}

#[test]
fn codel_holds_the_queue_delay_near_target() {
    // An unresponsive source 5% over the link: CoDel's drop rate climbs
    // to the excess (50 a second) and holds the queue near TARGET: 5 ms,
    // 5 packets at 1000 a second.
    let (v, len) = run_sampled(
        &codel_config(1050, 30, "CoDel"),
        &["c.drops", "d.count", "q.length", "q.drops"],
    );
    let (drops, sent, left) = (num(&v[0]), num(&v[1]), num(&v[2]));
    assert_eq!(drops + sent + left, 31_500, "{v:?}");
    assert_eq!(num(&v[3]), 0, "{v:?}");
    // About the excess, less what the first INTERVALs let through.
    assert!((1_200..1_500).contains(&drops), "{v:?}");
    assert!(len.len() >= 290, "{len:?}");
    // After the first seconds the queue never holds more than a few
    // TARGETs' worth, and comes back to about TARGET every 2 s.
    let settled = &len[30..];
    assert!(settled.iter().all(|&l| l <= 25), "{len:?}");
    for window in settled.chunks(20) {
        assert!(window.iter().min().unwrap() <= &8, "{len:?}");
    }
}

#[test]
fn codel_bounds_a_queue_that_tail_drop_lets_grow() {
    // 20% over the link: CoDel drops the excess, the queue swings between
    // TARGET and a few hundred packets (an unresponsive source does not
    // slow down; RFC 8289 restarts each dropping state from the drops of
    // the last one), where a plain Queue grows by 200 packets a second.
    let (v, len) = run_sampled(
        &codel_config(1200, 20, "CoDel"),
        &["c.drops", "d.count", "q.length", "q.drops"],
    );
    let (drops, sent, left) = (num(&v[0]), num(&v[1]), num(&v[2]));
    assert_eq!(drops + sent + left, 24_000, "{v:?}");
    assert_eq!(num(&v[3]), 0, "{v:?}");
    assert!((3_000..4_000).contains(&drops), "{v:?}");
    assert!(len.iter().all(|&l| l < 450), "{len:?}");
    assert!(
        len[50..].iter().filter(|&&l| l <= 15).count() >= 5,
        "{len:?}"
    );
    let plain = run(
        "RatedSource(RATE 1200, LIMIT 24000, STOP true) -> q :: Queue(5000) \
         -> RatedUnqueue(1000) -> Discard;",
        &["q.length"],
    );
    assert!(num(&plain[0]) > 3_900, "{plain:?}");
}

#[test]
fn codel_without_load_drops_nothing_and_a_smaller_target_drops_more() {
    let v = run(
        "RatedSource(RATE 900, LIMIT 9000, STOP true) -> SetTimestamp -> q :: Queue \
         -> c :: CoDel -> RatedUnqueue(1000) -> Discard;",
        &["c.drops"],
    );
    assert_eq!(v[0], "0");
    let at = |codel: &str| num(&run(&codel_config(1050, 10, codel), &["c.drops"])[0]);
    let default = at("CoDel");
    assert!(default > 0);
    assert!(at("CoDel(1ms, 100ms)") > default);
    // Packets whose timestamp's seconds are 0 are not judged (Click: the
    // first timestamp was never set), so the queue just grows.
    let v = run(
        "RatedSource(RATE 1200, LIMIT 12000, STOP true) -> SetTimestamp(0.5) \
         -> q :: Queue(5000) -> c :: CoDel -> RatedUnqueue(1000) -> Discard;",
        &["c.drops", "q.length"],
    );
    assert_eq!(v[0], "0", "{v:?}");
    assert!(num(&v[1]) > 1_900, "{v:?}");
}

#[test]
fn codel_handlers_read_as_documented() {
    let v = run(
        &codel_config(1200, 1, "CoDel(2ms, INTERVAL 0.05, QUEUES q)"),
        &[
            "c.codel_target",
            "c.codel_interval",
            "c.config",
            "c.queues",
            "c.stats",
            "c.drops",
        ],
    );
    assert_eq!(v[0], "2ms");
    assert_eq!(v[1], "0.05");
    assert_eq!(v[2], "0.002000s, 0.050000 s, ");
    assert_eq!(v[3], "q");
    let drops = num(&v[5]);
    assert!(drops > 0, "{v:?}");
    let stats: Vec<&str> = v[4].lines().collect();
    assert_eq!(stats.len(), 2, "{v:?}");
    assert!(stats[0].ends_with(" current queue"), "{v:?}");
    assert_eq!(stats[1], format!("{drops} drops"));
    // Defaults: Click's keyword handlers read empty, `config` shows them.
    let v = run(
        &codel_config(1200, 1, "CoDel"),
        &["c.codel_target", "c.config", "c.handlers"],
    );
    assert_eq!(v[0], "");
    assert_eq!(v[1], "0.005000s, 0.100000 s, ");
    for h in [
        "codel_target\trw",
        "codel_interval\trw",
        "stats\tr",
        "drops\tr",
    ] {
        assert!(v[2].lines().any(|l| l == h), "{h} in {}", v[2]);
    }
}

#[test]
fn codel_configuration_errors() {
    let check = |config: &str| {
        let o = bricks(&["check", "-e", config]);
        assert!(!o.status.success(), "{config}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = check("InfiniteSource -> Queue -> Unqueue -> CoDel -> Discard;");
    assert!(err.contains("CoDel") || err.contains("pull"), "{err}");
    let err = check("InfiniteSource(LIMIT 1) -> CoDel -> Discard;");
    assert!(!err.is_empty());
    let err = check("InfiniteSource -> Queue -> CoDel(INTERVAL 0) -> Unqueue -> Discard;");
    assert!(err.contains("INTERVAL"), "{err}");
    let err = check(
        "InfiniteSource -> q :: Queue -> CoDel(QUEUES c) -> Unqueue -> c :: Counter -> Discard;",
    );
    assert!(err.contains("Counter"), "{err}");
}

/// 1500 packets a second into a Queue that a 1000-packet link empties:
/// the element `aqm` (named r) in front of it, `secs` seconds of it.
fn red_config(secs: u64, aqm: &str) -> String {
    format!(
        "RatedSource(RATE 1500, LIMIT {}, STOP true) -> r :: {aqm} -> q :: Queue(1000) \
         -> RatedUnqueue(1000) -> d :: Counter -> Discard;",
        1500 * secs
    )
}

#[test]
fn adaptive_red_raises_max_p_until_the_queue_is_at_target() {
    // A third of the packets must go. RED with MAX_P 0.02 needs an average
    // well past MAX_THRESH for that; AdaptiveRED raises MAX_P every 0.5 s
    // while the average is above TARGET and brings it to TARGET.
    let handlers = [
        "r.drops",
        "d.count",
        "q.length",
        "q.drops",
        "r.avg_queue_size",
        "r.max_p",
        "r.max_p_ppm",
        "r.min_thresh",
        "r.max_thresh",
    ];
    let v = run(
        &red_config(20, "AdaptiveRED(20, 0.02, QUEUES q)"),
        &handlers,
    );
    assert_eq!(num(&v[0]) + num(&v[1]) + num(&v[2]), 30_000, "{v:?}");
    assert_eq!(num(&v[3]), 0, "{v:?}");
    let avg = num(&v[4]);
    assert!((15..=25).contains(&avg), "{v:?}");
    let max_p: f64 = v[5].parse().unwrap();
    assert!((0.1..0.51).contains(&max_p), "{v:?}");
    // The same value, in millionths (read back from the fewest decimals).
    assert!(num(&v[6]).abs_diff((max_p * 1e6) as u64) <= 10, "{v:?}");
    assert_eq!((num(&v[7]), num(&v[8])), (10, 30), "{v:?}");
    // The same load on RED(10, 30, 0.02) settles higher.
    let red = run(
        &red_config(20, "RED(10, 30, 0.02, QUEUES q)"),
        &["r.avg_queue_size"],
    );
    assert!(num(&red[0]) > avg + 5, "RED {red:?}, AdaptiveRED {v:?}");
    // MAX_P grows with time while the load lasts.
    let early = run(&red_config(4, "AdaptiveRED(20, 0.02)"), &["r.max_p_ppm"]);
    let early = num(&early[0]);
    assert!(
        early > 20_004 && early < (max_p * 1e6) as u64,
        "{early} {v:?}"
    );
}

#[test]
fn adaptive_red_lowers_max_p_under_light_load() {
    let v = run(
        "RatedSource(RATE 500, LIMIT 10000, STOP true) -> r :: AdaptiveRED(20, 0.3) \
         -> q :: Queue(1000) -> RatedUnqueue(1000) -> Discard;",
        &["r.drops", "r.max_p", "r.stats"],
    );
    assert_eq!(v[0], "0");
    let max_p: f64 = v[1].parse().unwrap();
    assert!((0.009..=0.01).contains(&max_p), "{v:?}");
    let stats: Vec<&str> = v[2].lines().collect();
    assert_eq!(stats.len(), 3, "{v:?}");
    assert!(stats[0].ends_with(" current queue"), "{v:?}");
    assert!(stats[1].ends_with(" avg queue"), "{v:?}");
    assert_eq!(stats[2], "0 drops", "{v:?}");
}

#[test]
fn adaptive_red_handlers_and_errors() {
    // Written parameters are RED's; MAX_P then adapts from there.
    let v = run(
        &red_config(1, "AdaptiveRED(TARGET 40, MAX_P 0.1, STABILITY 2)"),
        &["r.min_thresh", "r.max_thresh", "r.config", "r.handlers"],
    );
    assert_eq!((num(&v[0]), num(&v[1])), (20, 60), "{v:?}");
    assert_eq!(v[2], "TARGET 40, MAX_P 0.1, STABILITY 2");
    for h in ["max_p\trw", "min_thresh\trw", "stats\tr", "drops\tr"] {
        assert!(v[3].lines().any(|l| l == h), "{h} in {}", v[3]);
    }
    let check = |config: &str| {
        let o = bricks(&["check", "-e", config]);
        assert!(!o.status.success(), "{config}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = check("InfiniteSource -> AdaptiveRED(20, 0.1) -> Discard;");
    assert!(err.contains("no Queue"), "{err}");
    let err = check("InfiniteSource -> AdaptiveRED(20, 1.5) -> Queue -> Unqueue -> Discard;");
    assert!(err.contains("MAX_P"), "{err}");
    let err =
        check("InfiniteSource -> AdaptiveRED(20, 0.1, q) -> q :: Queue -> Unqueue -> Discard;");
    assert!(!err.is_empty());
}
