//! `bricks cluster` as a user meets it without root: sizing a cluster
//! (`plan`), validating cluster files (`check`: the reason and exit status
//! 2 for files that cannot work), and the configuration a server runs
//! (`config`), which `bricks check` accepts.

#[allow(dead_code)] // shared with the other tests
mod common;

use common::{bricks, root, stderr, stdout};

#[test]
fn cluster_help_has_examples() {
    let o = bricks(&["cluster", "--help"]);
    assert!(o.status.success());
    let t = stdout(&o);
    for w in [
        "plan", "check", "config", "up", "status", "down", "kill", "restart",
    ] {
        assert!(t.contains(w), "{w} missing from:\n{t}");
    }
    assert!(t.contains("Examples:") && t.contains("promisc"), "{t}");
    // The hidden helpers stay hidden.
    assert!(!t.contains("probe-send"), "{t}");
    let o = bricks(&["cluster", "up", "--help"]);
    assert!(stdout(&o).contains("sudo bricks cluster up conf/cluster/rb4.toml"));
}

#[test]
fn plan_is_a_full_mesh_when_the_fanout_allows() {
    // RB4: 4 servers of one 10G port each, 3 links each.
    let o = bricks(&[
        "cluster",
        "plan",
        "--ports",
        "4",
        "--rate",
        "10G",
        "--fanout",
        "3",
        "--ports-per-server",
        "1",
    ]);
    let t = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(t.contains("full mesh"), "{t}");
    assert!(
        t.contains("servers:               4 (4 I/O, 0 intermediate)"),
        "{t}"
    );
    // VLB over a full mesh of N: internal links of 2R/N, servers 2R..3R.
    assert!(t.contains("internal link rate:    5 Gbps"), "{t}");
    assert!(t.contains("20 Gbps to 30 Gbps"), "{t}");
    // Two ports per server: half the servers, 2sR..3sR.
    let o = bricks(&[
        "cluster",
        "plan",
        "--ports",
        "8",
        "--rate",
        "10G",
        "--fanout",
        "3",
        "--ports-per-server",
        "2",
    ]);
    let t = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        t.contains("full mesh") && t.contains("4 (4 I/O, 0 intermediate)"),
        "{t}"
    );
    assert!(t.contains("40 Gbps to 60 Gbps"), "{t}");
}

#[test]
fn plan_is_a_fly_when_the_fanout_is_too_small() {
    let o = bricks(&[
        "cluster",
        "plan",
        "--ports",
        "16",
        "--rate",
        "10G",
        "--fanout",
        "4",
        "--ports-per-server",
        "1",
    ]);
    let t = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(t.contains("-fly"), "{t}");
    assert!(t.contains("(16 I/O,"), "{t}");
    assert!(!t.contains(" 0 intermediate"), "{t}");
    // Nonsense is refused with exit 2.
    let o = bricks(&["cluster", "plan", "--ports", "0", "--fanout", "4"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    let o = bricks(&[
        "cluster", "plan", "--ports", "4", "--fanout", "3", "--rate", "fast",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("expected a rate"), "{}", stderr(&o));
}

#[test]
fn plan_prints_and_plots_figure3() {
    let o = bricks(&["cluster", "plan", "--figure3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).lines().count() > 3, "{}", stdout(&o));
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("fig3.svg");
    let o = bricks(&["cluster", "plan", "--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg"), "{text}");
}

#[test]
fn the_example_clusters_check() {
    for f in ["conf/cluster/rb4.toml", "conf/cluster/fly.toml"] {
        let o = bricks(&["cluster", "check", f]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let t = stdout(&o);
        assert!(t.contains(&format!("ok: {f}")), "{t}");
    }
}

/// Checks the cluster file `text`; returns (exit status, stderr).
fn check_text(text: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, text).unwrap();
    let o = bricks(&["cluster", "check", path.to_str().unwrap()]);
    (o.status.code(), stderr(&o))
}

fn four_nodes(head: &str, port_extra: impl Fn(usize) -> String) -> String {
    let mut s = format!("name = \"t\"\nrate = \"100Mbps\"\n{head}\n");
    for i in 1..=4 {
        s.push_str(&format!(
            "[[node]]\nname = \"n{i}\"\n[[node.port]]\niface = \"ext0\"\naddress = \
             \"10.{i}.0.1/24\"\n{}\n",
            port_extra(i)
        ));
    }
    s
}

#[test]
fn check_refuses_files_that_cannot_work_with_the_reason() {
    // Good as it is.
    let (code, err) = check_text(&four_nodes("max_fanout = 3", |_| String::new()));
    assert_eq!(code, Some(0), "{err}");
    // A full mesh of 4 needs 3 links per server.
    let (code, err) = check_text(&four_nodes("max_fanout = 2", |_| String::new()));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("fanout too small"), "{err}");
    // A custom topology in two pieces.
    let mut custom = four_nodes("topology = \"custom\"", |_| String::new());
    custom.push_str("[[link]]\na = \"n1\"\nb = \"n2\"\n\n[[link]]\na = \"n3\"\nb = \"n4\"\n");
    let (code, err) = check_text(&custom);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("in pieces"), "{err}");
    // Two ports with one MAC.
    let (code, err) = check_text(&four_nodes("", |i| {
        format!(
            "mac = \"02:00:00:00:00:{:02x}\"",
            if i == 4 { 3 } else { i }
        )
    }));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("MAC 02:00:00:00:00:03 is given to both"),
        "{err}"
    );
    // A file that is not there.
    let o = bricks(&["cluster", "check", "conf/cluster/none.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("none.toml"), "{}", stderr(&o));
}

#[test]
fn config_prints_what_a_server_runs() {
    let o = bricks(&["cluster", "config", "conf/cluster/rb4.toml", "n1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("VLBNode("), "{text}");
    // It names the cluster file by its absolute path and wants the port's MAC.
    let abs = std::fs::canonicalize(root().join("conf/cluster/rb4.toml")).unwrap();
    assert!(text.contains(abs.to_str().unwrap()), "{text}");
    assert!(text.contains("$MAC0"), "{text}");
    for iface in ["ext0", "vn2", "vn3", "vn4"] {
        assert!(text.contains(iface), "{iface} missing:\n{text}");
    }
    // `bricks check` takes it, given the MAC.
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("n1.click");
    std::fs::write(&conf, &text).unwrap();
    let o = bricks(&[
        "check",
        conf.to_str().unwrap(),
        "-D",
        "MAC0=02:00:00:00:01:01",
    ]);
    assert!(o.status.success(), "{}\n{text}", stderr(&o));
    // A node the file does not have.
    let o = bricks(&["cluster", "config", "conf/cluster/rb4.toml", "n9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no node `n9` (nodes: n1, n2, n3, n4)"),
        "{}",
        stderr(&o)
    );
}
