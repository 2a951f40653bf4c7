//! `bricks bench routes --quick --routes 20000` end to end, as root: a
//! namespace is made, 20,000 routes are written into its table 100 over
//! netlink, followed into DIR-24-8, dumped again, and the same routes go
//! through the decoder, the write handler and the LPM insert; every row
//! of the report is printed with a nonzero figure, and the namespace is
//! gone afterwards. Timings are not judged: the machine is shared.

use bricks_netns::{list_namespaces, skip_unless_root};
use std::process::{Command, Stdio};

/// Rows whose first figure must be above zero.
const ROWS: &[&str] = &[
    "kernel insert, no listener",
    "kernel insert rate, no listener",
    "kernel insert, a follower listening",
    "kernel insert rate, a follower listening",
    "ip -batch (route replace, first run only)",
    "follow rate, first to last route applied",
    "reader during the follow",
    "dump and apply",
    "dump and apply rate",
    "reader during the full-table load",
    "reader, idle full table",
    "reader, idle empty table",
    "decoder alone (netlink::decode)",
    "decoder + follower -> DIR-24-8 (from buffers)",
    "write handler `add` -> DIR-24-8",
    "Lpm4Update::insert (bench lpm's update path)",
    "follow rate / Lpm4Update::insert (goal >= 0.5)",
    "follow rate / write handler `add`",
    "dump and apply rate / Lpm4Update::insert",
    "dump and apply rate / write handler `add`",
    "decoder + follower from buffers / write handler `add`",
    "reader during full-table load / idle full table",
];

/// The first number after `label` on its row (a longer label that
/// starts alike is passed over: its next word is no number).
fn figure(out: &str, label: &str) -> Option<f64> {
    out.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix(label)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[test]
fn bench_routes_quick_prints_every_row_with_a_figure() {
    if skip_unless_root("bench_routes_quick_prints_every_row_with_a_figure").is_some() {
        return;
    }
    let child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["bench", "routes", "--quick", "--routes", "20000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bricks runs");
    // The bench's namespaces are named after its process id.
    let prefix = format!("b{}rt-", child.id() % 100_000);
    let out = child.wait_with_output().expect("bricks ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bricks bench routes failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("machine: "), "{stdout}");
    assert!(stdout.contains("20000 generated IPv4 routes"), "{stdout}");
    for row in ROWS {
        match figure(&stdout, row) {
            Some(v) if v > 0.0 => {}
            other => panic!("row `{row}`: {other:?}\n{stdout}"),
        }
    }
    assert!(
        figure(&stdout, "follow lag after the kernel's last insert").is_some(),
        "{stdout}"
    );
    let left: Vec<String> = list_namespaces()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}
