//! `bricks bench multistage --quick` end to end: the single-PC model
//! (Fig. 1) and the balancer in memory (Fig. 6) run, and, as root, one
//! router on veths (Fig. 5); the summary has rows for each figure with no
//! empty cell and a verdict, and every plot is well-formed SVG holding
//! the measured series beside the paper's or the ideal one, with its axis
//! labels. Fig. 7 (whole multistage routers in namespaces, a minute and
//! more) is left to the full bench.

use std::process::{Command, Stdio};
use std::time::Instant;

#[allow(dead_code)] // shared with the other tests
mod common;

use common::{check_xml, texts};

/// The plots and, for each, texts it must hold: axis labels, then at
/// least one measured and one reference legend.
const PLOTS: &[(&str, &[&str])] = &[
    (
        "fig1-model.svg",
        &[
            "Ethernet frame size (bytes)",
            "saturation forwarding rate (Gbit/s)",
            "model, paper: 640 kpps, 8 Gbit/s bus",
        ],
    ),
    (
        "fig6-balancer.svg",
        &[
            "back ports n",
            "rate relative to ODB, 1 back port",
            "bricks DTX-n (in memory)",
            "bricks ODB (in memory)",
            "paper DTX-n (n = 1, 3)",
            "paper ODB",
        ],
    ),
];

const VETH_PLOT: (&str, &[&str]) = (
    "fig5-router.svg",
    &[
        "Ethernet frame size (bytes)",
        "forwarding rate (kpps)",
        "bricks, buffers recycled (veths)",
        "bricks, a buffer allocated per packet (computed)",
        "1 Gbit/s line rate",
        "10 Gbit/s line rate",
    ],
);

#[test]
fn the_svg_check_can_fail() {
    assert!(
        check_xml("<?xml version=\"1.0\"?><svg a=\"1\"><g><text>a &amp; b</text></g></svg>")
            .is_ok()
    );
    assert!(check_xml("<svg><!-- c --><line x=\"1\"/></svg>").is_ok());
    for bad in [
        "<svg><g></svg>",
        "<svg></g>",
        "<svg a=\"1/>",
        "<svg><text>a & b</text></svg>",
        "<svg/><svg/>",
        "<svg>",
        "x<svg/>",
    ] {
        assert!(check_xml(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_quick_bench_has_every_row_and_plot() {
    let root = bricks_netns::is_root();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "bench",
        "multistage",
        "--quick",
        "--only",
        "fig1",
        "--only",
        "fig6",
    ];
    if root {
        args.extend_from_slice(&["--only", "fig5"]);
    } else {
        eprintln!("not root: Fig. 5's veths left out");
    }
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(&args)
        .arg("-o")
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
    // The timed runs are child processes: the balancer's reports of
    // routers coming up stay out of the output.
    assert!(!stdout.contains("router 0 up"), "{stdout}");

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
            ["holds: ", "differs: ", "not run: "]
                .iter()
                .any(|v| r[4].starts_with(v)),
            "no verdict: {r:?}"
        );
    }
    let mut figures = vec![("Fig. 1", 2), ("Fig. 6", 3)];
    if root {
        figures.push(("Fig. 5", 3));
    }
    for (fig, n) in figures {
        let got = rows.iter().filter(|r| r[0] == fig).count();
        assert_eq!(got, n, "rows for {fig}:\n{summary}");
    }
    // Fig. 1's second model takes Fig. 5's measured rate when it ran.
    if root {
        assert!(summary.contains("(Fig. 5)"), "{summary}");
    }

    let mut plots = PLOTS.to_vec();
    if root {
        plots.push(VETH_PLOT);
    }
    for (file, wanted) in plots {
        let svg = std::fs::read_to_string(dir.path().join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        check_xml(&svg).unwrap_or_else(|e| panic!("{file} is not well-formed: {e}"));
        assert!(svg.starts_with("<svg"), "{file}");
        let t = texts(&svg);
        for w in wanted {
            assert!(t.iter().any(|x| x == w), "{file}: no text `{w}` in {t:?}");
        }
        let lines = svg.matches("<polyline").count();
        assert!(lines >= 2, "{file}: {lines} polylines");
    }
    // The measured Fig. 1 legend names this machine's rate.
    let svg = std::fs::read_to_string(dir.path().join("fig1-model.svg")).unwrap();
    assert!(
        texts(&svg)
            .iter()
            .any(|t| t.starts_with("model, this machine: ") && t.ends_with("kpps, 8 Gbit/s bus")),
        "{:?}",
        texts(&svg)
    );
}
