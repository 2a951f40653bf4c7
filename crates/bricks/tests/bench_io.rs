//! `bricks bench io` end to end: a short run of three subjects through real
//! veths in network namespaces (needs root), and the network it built is
//! gone afterwards.

use std::process::{Command, Stdio};

#[test]
fn a_short_bench_forwards_through_linux_and_bricks_and_cleans_up() {
    let name = "a_short_bench_forwards_through_linux_and_bricks_and_cleans_up";
    if bricks_netns::skip_unless_root(name).is_some() {
        return;
    }
    let child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args([
            "bench",
            "io",
            "--seconds",
            "1",
            "--runs",
            "1",
            // A warm-up run of each subject first, not counted.
            "--warm-up",
            "0.5",
            "--only",
            "linux,bricks,bricks-fastpath",
            // Three steps still probe rates above and below the loss-free
            // one; the test is for the bench's workings, not its figures.
            "--search-steps",
            "3",
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bricks runs");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    let report: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: not JSON: {stdout}"));
    assert_eq!(report["warm_up_seconds"].as_f64(), Some(0.5), "{report}");
    let subjects = report["subjects"].as_array().unwrap();
    let names: Vec<&str> = subjects.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["linux", "bricks", "bricks-fastpath"], "{report}");
    for s in subjects {
        let runs = s["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "{s}");
        let r = &runs[0];
        // Both forward: the sink received a good share of what was sent
        // (not all of it: the generator outruns bricks on a small machine).
        assert!(r["sent"].as_u64().unwrap() > 1000, "{s}");
        assert!(r["received"].as_u64().unwrap() > 1000, "{s}");
        assert!(s["mpps"]["median"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["loss_free"]["mpps"].as_f64().is_some(), "{s}");
        // The other work beside the run was measured: the bench's own
        // generator, router and sink are not in it.
        let other = r["other_cpus"].as_f64().unwrap();
        assert!((0.0..2.5).contains(&other), "{s}");
    }
    // Each rate of a search has two trials when its first one loses more
    // than allowed (--probe-trials 2 by default): a failed trial is never
    // the only one at its rate.
    for s in subjects {
        for search in s["loss_free"]["searches"].as_array().unwrap() {
            let probes: Vec<(u64, f64)> = search["probes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["rate_pps"].as_u64().unwrap(),
                        p["loss_pct"].as_f64().unwrap(),
                    )
                })
                .collect();
            for (i, &(rate, loss)) in probes.iter().enumerate() {
                let alone = probes.get(i.wrapping_sub(1)).is_none_or(|p| p.0 != rate)
                    && probes.get(i + 1).is_none_or(|p| p.0 != rate);
                assert!(
                    loss <= 1.0 || !alone,
                    "a failed trial alone at its rate: {search}"
                );
            }
        }
    }
    // bricks opened both interfaces itself and counted what it forwarded.
    let bricks = &subjects[1]["runs"][0];
    let notes = bricks["notes"].to_string();
    assert!(notes.contains("r0: ") && notes.contains("r1: "), "{bricks}");
    assert!(
        bricks["router"]["sent"].as_u64().unwrap() > 1000,
        "{bricks}"
    );
    // With FASTPATH the router loaded its XDP fast path on r0 and the
    // program, not the configuration, forwarded the frames.
    let fast = &subjects[2]["runs"][0];
    let notes = fast["notes"].to_string();
    assert!(notes.contains("XDP fast path"), "{fast}");
    assert!(
        fast["router"]["sent"].as_u64().unwrap() < fast["received"].as_u64().unwrap() / 10,
        "{fast}"
    );
    assert!(report["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "bricks / Linux"
            && (r["loss_free"].as_f64().is_some() || r["not_compared"].as_str().is_some())));
    // Nothing of the test network is left.
    let prefix = format!("b{}io-", pid % 100_000);
    let left: Vec<String> = bricks_netns::list_namespaces()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
