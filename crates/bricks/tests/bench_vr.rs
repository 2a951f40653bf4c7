//! `bricks bench vr --quick` end to end: every experiment of Egi et al.
//! runs, the summary has rows for every figure with no empty cell and a
//! verdict, and every plot is well-formed SVG holding the measured series
//! beside the paper's or the ideal one, with its axis labels.

use std::process::{Command, Stdio};

#[allow(dead_code)] // shared with the other tests
mod common;

use common::{check_xml, texts};

/// The plots and, for each, texts it must hold: axis labels, then at
/// least one measured and one reference legend.
const PLOTS: &[(&str, &[&str])] = &[
    (
        "fig2-flows.svg",
        &[
            "flows (source-to-sink paths)",
            "rate relative to one flow",
            "bricks (in memory)",
            "paper: flat at ~2.5 Mpps",
        ],
    ),
    (
        "fig4-iprouting.svg",
        &[
            "packet size (bytes)",
            "IP routing rate / minimal forwarding rate",
            "bricks, CPU only (in memory)",
            "paper (one core)",
        ],
    ),
    (
        "fig8-mapping.svg",
        &[
            "aggregate rate relative to (a)",
            "bricks (in memory)",
            "paper: limit of two cores, ~3 Mpps = 1.88x (a)",
        ],
    ),
    (
        "fig11-shared-queue.svg",
        &[
            "offered per input (Mpps)",
            "forwarded per input (Mpps)",
            "input 0, shared queue",
            "input 1, queue per input",
            "fair share (each input)",
        ],
    ),
    (
        "fig16-scaling.svg",
        &[
            "virtual routers",
            "Mpps (64-byte packets)",
            "bricks, VRDemux BY mac",
            "bricks, VRDemux BY vlan",
            "goal: 80 % of one router",
        ],
    ),
    (
        "fig17-software-demux.svg",
        &[
            "forwarded (Mpps)",
            "high weight, bricks",
            "low weight, bricks",
            "high weight, ideal",
            "low weight, shares of arrivals (paper, right panel)",
        ],
    ),
    (
        "fig18-per-router-queues.svg",
        &[
            "forwarded (Mpps)",
            "high weight, bricks",
            "low weight, bricks",
            "high weight, ideal",
            "low weight, ideal",
        ],
    ),
];

#[test]
fn the_xml_check_can_fail() {
    assert!(check_xml("<svg a=\"1\"><g><line x=\"2\"/></g><text>a &amp; b</text></svg>").is_ok());
    assert!(check_xml("<?xml version=\"1.0\"?><!-- c --><svg/>").is_ok());
    for bad in [
        "<svg><g></svg>",
        "<svg></g>",
        "<svg a=1/>",
        "<svg a=\"1/>",
        "<svg><text>a & b</text></svg>",
        "<svg/><svg/>",
        "<svg>",
        "text<svg/>",
    ] {
        assert!(check_xml(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_quick_bench_has_every_row_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["bench", "vr", "--quick", "--no-callgrind", "-o"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("bricks runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );

    // The summary: a Markdown table, five cells a row, none empty, a
    // verdict in each, and every figure present.
    let summary = stdout
        .split("## Summary")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary:\n{stdout}"));
    let rows: Vec<Vec<&str>> = summary
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    for r in &rows {
        assert_eq!(r.len(), 5, "{r:?}");
        assert!(
            r.iter().all(|c| !c.is_empty() && *c != "-"),
            "empty cell: {r:?}"
        );
        assert!(
            r[4].starts_with("holds: ") || r[4].starts_with("differs: "),
            "no verdict: {r:?}\n{stdout}"
        );
    }
    for fig in [
        "Fig. 2", "Fig. 4", "Fig. 8", "Fig. 11", "Fig. 16", "Fig. 17", "Fig. 18",
    ] {
        assert!(
            rows.iter().any(|r| r[0] == fig),
            "no row for {fig}:\n{summary}"
        );
    }
    assert!(rows.len() >= 11, "{} rows:\n{summary}", rows.len());

    for (file, wanted) in PLOTS {
        let svg = std::fs::read_to_string(dir.path().join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        check_xml(&svg).unwrap_or_else(|e| panic!("{file} is not well-formed: {e}"));
        assert!(svg.starts_with("<svg"), "{file}");
        let t = texts(&svg);
        for w in *wanted {
            assert!(t.iter().any(|x| x == w), "{file}: no text `{w}` in {t:?}");
        }
        let lines = svg.matches("<polyline").count();
        assert!(lines >= 2, "{file}: {lines} polylines");
    }
}
