//! `bricks run --memrefs`: memory references and words per packet counted
//! in every element that can, the table at exit with exact figures, its
//! JSON form, an element's own `MEMREFS false`, and nothing at all (no
//! table, no counters) without the flag.

use std::process::{Command, Output};

fn bricks() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// 60 MPLS frames of flow 29 (to 10.34.0.1) and 40 of label 30, which
/// names no flow; the first are classified by tag, looked up in a trie
/// and queued. `$Q` is the queue's extra arguments.
fn config(q: &str) -> String {
    format!(
        "ft :: FlowTable(CAPACITY 64, FLOW tag 29 rate 1M);
         known :: InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 dd ff
             45 c0 00 14 00 03 00 00 ff 06 a4 fc 0a 01 02 01 0a 22 00 01>, LIMIT 60, BURST 8);
         unknown :: InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 ef ff
             45 c0 00 14 00 03 00 00 ff 06 a4 fc 0a 01 02 01 0a 22 00 01>, LIMIT 40, BURST 8);
         c :: TagClassifier(ft);
         known -> c; unknown -> c;
         c[0] -> Strip(18) -> CheckIPHeader -> rt :: RadixIPLookup(10.34.0.0/16 0)
             -> q :: FIFOQueue(1000{q}) -> Unqueue -> Discard;
         c[1] -> Discard;"
    )
}

fn run(config: &str, extra: &[&str]) -> Output {
    let out = bricks()
        .args(["run", "-e", config])
        .args(extra)
        .output()
        .expect("bricks runs");
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

/// The table's line for element `name`, split into fields, if any (the
/// final counters' lines have the class in parentheses).
fn find_line<'a>(stderr: &'a str, name: &str) -> Option<Vec<&'a str>> {
    stderr
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&name) && f.len() == 7 && !f[1].starts_with('('))
}

/// The table's line for element `name`.
fn line<'a>(stderr: &'a str, name: &str) -> Vec<&'a str> {
    find_line(stderr, name).unwrap_or_else(|| panic!("no line for {name} in:\n{stderr}"))
}

#[test]
fn table_with_exact_figures() {
    let out = run(&config(""), &["--memrefs"]);
    let e = text(&out.stderr);
    assert!(
        e.contains("memory references (Hardekopf et al.'s units: a word is 32 bits)"),
        "{e}"
    );
    // Every frame: its record (1 reference, 8 words), unknown ones too.
    assert_eq!(
        line(&e, "c"),
        ["c", "TagClassifier", "100", "100", "800", "1.00", "8.00"]
    );
    // 10.34.0.1 in a trie holding a /16: levels 1 to 4, 2 words each.
    assert_eq!(
        line(&e, "rt"),
        ["rt", "RadixIPLookup", "60", "240", "480", "4.00", "8.00"]
    );
    // FIFO: enqueue and dequeue, 3 references and 6 words each.
    assert_eq!(
        line(&e, "q"),
        ["q", "FIFOQueue", "60", "360", "720", "6.00", "12.00"]
    );
    // Elements that do not count are not in the table.
    assert_eq!(find_line(&e, "known"), None, "{e}");
    assert_eq!(find_line(&e, "ft"), None, "{e}");
    // 700 references and 2,000 words for the 100 packets c counted.
    assert!(
        e.contains(
            "router: 7.00 references, 20.00 words per packet \
             (700 and 2000 over 100 packets, those c counted)"
        ),
        "{e}"
    );
    // The counters themselves.
    assert!(
        e.contains("mem_packets=60 mem_refs=360 mem_words=720 enqueue_refs=180 enqueue_words=360 dequeue_refs=180 dequeue_words=360"),
        "{e}"
    );
}

#[test]
fn json_with_stats_json() {
    let out = run(&config(""), &["--memrefs", "--stats-json"]);
    let o = text(&out.stdout);
    let v: serde_json::Value = o
        .lines()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .unwrap_or_else(|| panic!("no JSON in: {o}"));
    let m = &v["memrefs"];
    assert_eq!(m["refs"], 700);
    assert_eq!(m["words"], 2000);
    assert_eq!(m["packets"], 100);
    assert_eq!(m["packets_of"], "c");
    assert_eq!(m["refs_per_packet"], 7.0);
    assert_eq!(m["words_per_packet"], 20.0);
    let names: Vec<&str> = m["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "rt", "q"]);
    assert_eq!(m["elements"][1]["refs_per_packet"], 4.0);
}

#[test]
fn an_elements_own_memrefs_false_wins() {
    let out = run(&config(", MEMREFS false"), &["--memrefs"]);
    let e = text(&out.stderr);
    line(&e, "c");
    line(&e, "rt");
    assert_eq!(find_line(&e, "q"), None, "{e}");
    assert!(!e.contains("mem_packets=60 mem_refs=360"), "{e}");
    assert!(
        e.contains("router: 3.40 references, 12.80 words per packet"),
        "{e}"
    );
}

#[test]
fn nothing_without_the_flag() {
    let out = run(&config(""), &["--stats-json", "--stats-interval", "10"]);
    let e = text(&out.stderr);
    let o = text(&out.stdout);
    assert!(!e.contains("memory references"), "{e}");
    assert!(!e.contains("mem_"), "{e}");
    assert!(!e.contains("enqueue_refs"), "{e}");
    // The counters (the handlers `bricks ctl SOCK stats` reads) too.
    assert!(o.contains("\"classified\":60"), "{o}");
    assert!(!o.contains("mem_"), "{o}");
    assert!(!o.contains("memrefs"), "{o}");
    // The same configuration counted: the keyword alone turns it on.
    let out = run(&config(", MEMREFS true"), &[]);
    let e = text(&out.stderr);
    assert!(e.contains("q (FIFOQueue): "), "{e}");
    assert!(e.contains("mem_packets=60 mem_refs=360"), "{e}");
    assert!(!e.contains("memory references"), "{e}");
    assert!(
        !e.contains("TagClassifier): classified=60 unknown=40 mem_"),
        "{e}"
    );
}
