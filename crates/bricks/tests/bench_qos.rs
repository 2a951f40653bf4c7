//! `bricks bench qos --quick` end to end: every experiment of Hardekopf
//! et al. runs in memory (no root needed), the summary has the rows of
//! every figure and table with no empty cell and a verdict, the counted
//! measures (memory references and words) ran, the sanity of the counts
//! that follow from the structures (k + 1 references for a chain of k,
//! one reference per trie level, the heap's growth against BinSort's flat
//! line), and every plot is well-formed SVG holding the measured series
//! beside the paper's or the model's, with its axis labels. Timings are
//! not checked: the machine is shared and noisy, and the bench is where
//! they are judged.

use std::process::{Command, Stdio};
use std::time::Instant;

/// The plots and, for each, texts it must hold: axis labels, then at
/// least one measured and one reference legend.
const PLOTS: &[(&str, &[&str])] = &[
    (
        "fig2a-memory-ratio.svg",
        &[
            "longest chain k",
            "memory relative to tagging",
            "FlowTable simulated, B = 0.0001",
            "model, B = 0.0001",
            "paper, B = 0.0001",
        ],
    ),
    (
        "fig2b-memory-link.svg",
        &[
            "link rate (Mbit/s)",
            "memory (KB)",
            "bricks FlowTable, match, k = 4",
            "tagging, 10 words per flow",
        ],
    ),
    (
        "fig3-classify.svg",
        &[
            "longest chain k",
            "ns or references per packet",
            "bricks HashClassifier, ns over the source",
            "bricks HashClassifier, references per packet",
            "paper: k + 1 references per packet",
        ],
    ),
    (
        "fig4-trie.svg",
        &[
            "trie depth (levels read)",
            "ns or references per lookup",
            "bricks RadixIPLookup, ns over the path",
            "paper: one reference per level",
        ],
    ),
    (
        "fig5-ordering.svg",
        &[
            "packets held",
            "ns per enqueue + dequeue",
            "bricks BinSort",
            "goal for BinSort: 30 ns",
        ],
    ),
    (
        "fig5-ordering-refs.svg",
        &[
            "packets held",
            "references per enqueue + dequeue",
            "bricks MDS-BinSort",
            "paper: MDS-BinSort, 14.5 references",
        ],
    ),
    (
        "fig7-architectures.svg",
        &[
            "ns or words per packet",
            "bricks ns per packet (architectures 1-12 in the order of Table 4)",
            "bricks 32-bit words per packet",
            "paper: words per packet (from the bandwidth of Table 4)",
        ],
    ),
];

/// Checks that `svg` is well-formed as SVG writers make it: every element
/// closed in order, one root, quoted attributes, no stray `<` or `&`.
fn well_formed(svg: &str) -> Result<(), String> {
    let mut open: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = svg;
    loop {
        let Some(lt) = rest.find('<') else {
            if !rest.trim().is_empty() {
                return Err("text after the root".into());
            }
            break;
        };
        let text = &rest[..lt];
        if text.contains('&') && !entities_ok(text) {
            return Err(format!("bad `&` in {text:?}"));
        }
        if open.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root: {text:?}"));
        }
        rest = &rest[lt..];
        let (end_marker, skip) = if rest.starts_with("<!--") {
            ("-->", true)
        } else if rest.starts_with("<?") {
            ("?>", true)
        } else {
            (">", false)
        };
        let end = rest.find(end_marker).ok_or("unclosed markup")?;
        let tag = &rest[1..end];
        rest = &rest[end + end_marker.len()..];
        if skip {
            continue;
        }
        if tag.contains('<') {
            return Err(format!("`<` inside <{tag}>"));
        }
        if !tag.matches('"').count().is_multiple_of(2) {
            return Err(format!("unbalanced quotes in <{tag}>"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            match open.pop() {
                Some(o) if o == name.trim() => continue,
                o => return Err(format!("</{name}> closes {o:?}")),
            }
        }
        let name = tag
            .trim_end_matches('/')
            .split_whitespace()
            .next()
            .ok_or("empty tag")?;
        if open.is_empty() {
            roots += 1;
        }
        if !tag.ends_with('/') {
            open.push(name);
        }
    }
    match (open.last(), roots) {
        (None, 1) => Ok(()),
        (Some(o), _) => Err(format!("<{o}> never closed")),
        (None, n) => Err(format!("{n} roots")),
    }
}

/// Every `&` in `text` starts a known or numeric character reference.
fn entities_ok(text: &str) -> bool {
    text.split('&').skip(1).all(|r| {
        let Some((name, _)) = r.split_once(';') else {
            return false;
        };
        matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
            || name.strip_prefix('#').is_some_and(|n| {
                n.strip_prefix('x').map_or(n.parse::<u32>().is_ok(), |h| {
                    u32::from_str_radix(h, 16).is_ok()
                })
            })
    })
}

/// The contents of every `<text>` element, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

#[test]
fn the_svg_check_can_fail() {
    assert!(
        well_formed("<?xml version=\"1.0\"?><svg a=\"1\"><g><text>a &amp; b</text></g></svg>")
            .is_ok()
    );
    assert!(well_formed("<svg><!-- c --><line x=\"1\"/></svg>").is_ok());
    for bad in [
        "<svg><g></svg>",
        "<svg></g>",
        "<svg a=\"1/>",
        "<svg><text>a & b</text></svg>",
        "<svg/><svg/>",
        "<svg>",
        "x<svg/>",
    ] {
        assert!(well_formed(bad).is_err(), "{bad}");
    }
}

/// The cells of the Markdown table that follows `title` in `out`, header
/// and rule left out.
fn table_after<'a>(out: &'a str, title: &str) -> Vec<Vec<&'a str>> {
    let rest = out
        .split(title)
        .nth(1)
        .unwrap_or_else(|| panic!("no `{title}` in:\n{out}"));
    rest.lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

#[test]
fn a_quick_bench_has_every_row_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["bench", "qos", "--quick", "--no-callgrind", "-o"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("bricks runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n({:.1} s)", t.elapsed().as_secs_f64());
    assert!(
        out.status.success(),
        "status {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );

    let rows = table_after(&stdout, "## Summary");
    for r in &rows {
        assert_eq!(r.len(), 5, "{r:?}");
        assert!(
            r.iter().all(|c| !c.is_empty() && *c != "-"),
            "empty cell: {r:?}"
        );
        // Every measure ran: nothing here needs root or a missing tool.
        assert!(
            ["holds: ", "differs: "].iter().any(|v| r[4].starts_with(v)),
            "no verdict, or not run: {r:?}"
        );
    }
    for (fig, n) in [
        ("Fig. 2", 2),
        ("Fig. 3", 2),
        ("Fig. 4", 4),
        ("Fig. 5", 3),
        ("Fig. 7", 2),
        ("Table 3", 1),
        ("Table 4", 1),
    ] {
        let got = rows.iter().filter(|r| r[0] == fig).count();
        assert_eq!(got, n, "rows for {fig}:\n{stdout}");
    }

    // Fig. 3: a chain of k costs k + 1 references (the bucket and k
    // records), tagging one.
    let fig3 = table_after(&stdout, "Fig. 3: ");
    assert!(fig3.len() >= 3, "{fig3:?}");
    for r in &fig3 {
        let refs: f64 = r[4].split(" / ").next().unwrap().parse().unwrap();
        let want = match r[0].strip_prefix("match, k = ") {
            Some(k) => k.parse::<f64>().unwrap() + 1.0,
            None => 1.0,
        };
        assert_eq!(refs, want, "{r:?}");
    }
    // Fig. 4: one reference per level at depths 1, 3 and 8.
    let fig4 = table_after(&stdout, "Fig. 4: ");
    for (r, d) in fig4.iter().zip(["1", "3", "8"]) {
        assert_eq!((r[0], r[1]), (d, d), "{r:?}");
    }
    // Fig. 5: the heap's references grow with the queue, BinSort's do
    // not.
    let fig5 = table_after(&stdout, "Fig. 5: ");
    let refs = |name: &str| -> Vec<f64> {
        fig5.iter()
            .filter(|r| r[0] == name)
            .map(|r| r[3].split(" / ").next().unwrap().parse().unwrap())
            .collect()
    };
    let (heap, bins) = (refs("heap (exact sort)"), refs("BinSort"));
    assert!(heap.len() >= 2 && bins.len() == heap.len());
    assert!(heap[heap.len() - 1] > 2.0 * heap[0], "{heap:?}");
    assert!(bins[bins.len() - 1] <= bins[0] + 3.0, "{bins:?}");
    // Fig. 7: the twelve architectures and the IPv4 router, each counted.
    let fig7 = table_after(&stdout, "Fig. 7 / Table 4: ");
    assert_eq!(fig7.len(), 13, "{fig7:?}");
    for r in &fig7[..12] {
        assert_ne!(r[5], "-", "{r:?}");
    }
    // Table 3: every link from OC-1 to OC-768, bricks' value beside the
    // paper's.
    let t3 = table_after(&stdout, "Table 3: ");
    assert_eq!(t3.len(), 8, "{t3:?}");
    assert!(t3.iter().all(|r| !r[2].starts_with("- ")), "{t3:?}");

    for (file, wanted) in PLOTS {
        let svg = std::fs::read_to_string(dir.path().join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        well_formed(&svg).unwrap_or_else(|e| panic!("{file} is not well-formed: {e}"));
        assert!(svg.starts_with("<svg"), "{file}");
        let t = texts(&svg);
        for w in *wanted {
            assert!(t.iter().any(|x| x == w), "{file}: no text `{w}` in {t:?}");
        }
        let lines = svg.matches("<polyline").count();
        assert!(lines >= 2, "{file}: {lines} polylines");
    }
}
