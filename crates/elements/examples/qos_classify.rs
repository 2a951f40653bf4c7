//! Runs N MPLS-labelled frames through TagClassifier (or, with `hash`,
//! N UDP frames through HashClassifier) on one engine, for instruction
//! counts under callgrind: `qos_classify tag|hash N [nometer] [memrefs]`.
//! `memrefs` gives the classifier MEMREFS true: the difference per packet
//! from a run without it is what counting memory references costs, and a
//! run without it costs what the classifier did before it could count
//! (its MEMREFS false instance has no counting code); `nometer` leaves the
//! flows' meters alone (METER false). Per packet: run N and 2N packets
//! and divide the difference by N, e.g.
//! `valgrind --tool=callgrind target/release/examples/qos_classify tag 100000`.

use bricks_config::{Source, SourceMap};
use bricks_runtime::{build, Engine};

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "tag".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let flags: Vec<String> = args.collect();
    let mut extra = String::new();
    // `nometer`: classify without updating the flows' meters, to measure
    // what the two atomic additions per packet cost.
    if flags.iter().any(|f| f == "nometer") {
        extra.push_str(", METER false");
    }
    // `memrefs`: count memory references (mem_refs, mem_words).
    let memrefs = flags.iter().any(|f| f == "memrefs");
    if memrefs {
        extra.push_str(", MEMREFS true");
    }
    let meter = extra;
    let config = match kind.as_str() {
        "tag" => format!(
            "ft :: FlowTable(CAPACITY 64, FLOW tag 29 rate 1M);
             InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 dd ff
                 45 c0 00 14 00 03 00 00 ff 06 a4 e8 0a 01 02 01 0a 22 00 01>, LIMIT {n}, BURST 32)
             -> c :: TagClassifier(ft{meter}) -> Discard; c[1] -> Discard;"
        ),
        _ => format!(
            "ft :: FlowTable(MODE match, CAPACITY 1024, K 4, SEED 1,
                 FLOW udp 18.26.4.99:1024 1.0.0.2:1025 rate 1M);
             InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 08 00 45 00 00 32 00 00
                 40 00 40 11 23 3d 12 1a 04 63 01 00 00 02 04 00 04 01 00 1e 00 00 00 00 00 00
                 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00>, LIMIT {n}, BURST 32)
             -> c :: HashClassifier(ft{meter}) -> Discard; c[1] -> Discard;"
        ),
    };
    let mut map = SourceMap::default();
    let router = bricks_config::parse(
        &mut map,
        Source {
            name: "<qos_classify>".into(),
            text: config,
        },
    )
    .expect("configuration parses");
    let plan = build(&router, &bricks_elements::registry()).expect("configuration builds");
    let mut engine = Engine::new(&plan).expect("engine");
    engine.idle_sleep = false;
    let s = engine.run();
    let classified = s.stats("c").and_then(|s| s.get("classified")).unwrap_or(0);
    assert_eq!(classified, n);
    println!("classified {classified}");
    if memrefs {
        let st = s.stats("c");
        let get = |k| st.and_then(|s| s.get(k)).unwrap_or(0);
        println!(
            "mem_packets {} mem_refs {} mem_words {}",
            get("mem_packets"),
            get("mem_refs"),
            get("mem_words")
        );
    }
}
