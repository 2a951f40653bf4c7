//! `bricks bench ipsec --quick` end to end: the in-memory tables (every
//! suite and size, encap and decap), the sequence-counter table and, as
//! root, the run through veths, with sane figures; and the network it
//! built is gone afterwards.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The numbers of a table row, after its label (which may hold spaces).
fn numbers(line: &str) -> Vec<f64> {
    line.split_whitespace()
        .filter_map(|w| w.parse::<f64>().ok())
        .collect()
}

#[test]
fn a_quick_bench_prints_sane_tables() {
    let start = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["bench", "ipsec", "--quick", "--no-callgrind"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bricks runs");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    assert!(took < Duration::from_secs(60), "took {took:?}\n{stdout}");

    // Encap and decap tables: a row for every workload, each with a
    // positive rate and time (element alone and whole graph).
    for table in ["encap: IPsecESPEncap alone", "decap: IPsecESPDecap alone"] {
        let body: Vec<&str> = stdout
            .split(table)
            .nth(1)
            .unwrap_or_else(|| panic!("no `{table}` table:\n{stdout}"))
            .lines()
            .skip_while(|l| !l.starts_with("suite"))
            .skip(1)
            .take_while(|l| l.starts_with("AES-"))
            .collect();
        assert_eq!(body.len(), 8, "{table}:\n{stdout}");
        for (label, size) in [
            ("AES-128-GCM ", "64"),
            ("AES-128-GCM ", "1400"),
            ("AES-128-GCM ", "IMIX"),
            ("AES-256-GCM ", "64"),
            ("AES-128-CBC+SHA1 ", "IMIX"),
        ] {
            let row = body
                .iter()
                .find(|l| l.starts_with(label) && l.split_whitespace().nth(1) == Some(size))
                .unwrap_or_else(|| panic!("{table}: no row {label}{size}:\n{stdout}"));
            // Mpps, Gbps, ns (alone); Mpps, ns (whole graph); no
            // instruction counts with --no-callgrind.
            let after_size = row[label.len()..].trim_start().strip_prefix(size).unwrap();
            let n = numbers(after_size);
            assert!(n.len() >= 5, "{row}");
            let (mpps, gbps, ns, graph_mpps, graph_ns) = (n[0], n[1], n[2], n[3], n[4]);
            assert!(mpps > 0.0 && gbps > 0.0 && ns > 0.0, "{row}");
            assert!(graph_mpps > 0.0 && graph_ns >= ns, "{row}");
            // Mpps is printed to 0.01.
            assert!((mpps - 1e3 / ns).abs() <= 0.006, "Mpps and ns agree: {row}");
        }
    }
    assert!(
        stdout.contains("RouteBricks (SOSP 2009), IPsec: 14221"),
        "{stdout}"
    );

    // The sequence-counter table: three set-ups, positive rates.
    for setup in [
        "1 worker, 1 SA",
        "2 workers, 1 shared SA",
        "2 workers, 1 SA each",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(setup))
            .unwrap_or_else(|| panic!("no row `{setup}`:\n{stdout}"));
        let n = numbers(row);
        let (workers, per_worker, total) = (n[n.len() - 4], n[n.len() - 3], n[n.len() - 1]);
        assert!(workers == 1.0 || workers == 2.0, "{row}");
        assert!(per_worker > 0.0 && total >= per_worker * 0.9, "{row}");
    }

    if !bricks_netns::is_root() {
        assert!(
            stdout.contains("through veths: skipped, it needs root"),
            "{stdout}"
        );
        return;
    }
    // As root: the gateway forwarded ESP to the sink at every rate tried,
    // and Linux forwarding ran as the baseline.
    let bricks: Vec<Vec<f64>> = stdout
        .lines()
        .filter(|l| l.starts_with("bricks ipsec-gw.click"))
        .map(numbers)
        // The rows of the rates table, not of the summary below it.
        .filter(|n| n.len() >= 5)
        .collect();
    assert!(bricks.len() >= 2, "{stdout}");
    for n in &bricks {
        // size, [asked], offered, delivered, Gbps, loss
        let delivered = n[n.len() - 3];
        assert!(delivered > 0.0, "{n:?}\n{stdout}");
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("Linux forwarding, no ESP") && numbers(l).len() >= 5),
        "{stdout}"
    );
    assert!(
        stdout.contains("bricks counters: ") && stdout.contains(" protected"),
        "{stdout}"
    );
    // Nothing of the test network is left.
    let prefix = format!("b{}ipsec-", pid % 100_000);
    let left: Vec<String> = bricks_netns::list_namespaces()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
