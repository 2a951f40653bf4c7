//! `bricks demo` end to end, as root: it runs its traffic through the
//! router, prints the summary, and leaves nothing behind; and a run killed
//! outright is cleaned up by the next one, without touching any process it
//! did not start.
//!
//! Needs root (skipped otherwise, a failure under CI=true). The demo's
//! names are fixed (`bdemo-`, /run/bricks-demo.pids), so these tests take
//! turns.

use bricks_netns::{output_timeout, skip_unless_root, ChildGuard};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static ONE_DEMO_AT_A_TIME: Mutex<()> = Mutex::new(());

const STATE_FILE: &str = "/run/bricks-demo.pids";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn demo_namespaces() -> Vec<String> {
    bricks_netns::list_namespaces()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("bdemo-"))
        .collect()
}

fn demo(args: &[&str]) -> (bool, String) {
    let out = output_timeout(
        Command::new(env!("CARGO_BIN_EXE_bricks"))
            .current_dir(root())
            .arg("demo")
            .args(args),
        Duration::from_secs(180),
    )
    .unwrap();
    let text = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The start time of process `pid` (field 22 of /proc/PID/stat).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn alive(pid: u32, start: u64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rfind(')')
        .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'));
    start_time(pid) == Some(start) && !zombie
}

/// Kills a process that is not our child when dropped, if it is still
/// the one we mean: a failed test must not leave a leftover router.
struct KillOnDrop(u32, u64);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if alive(self.0, self.1) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
}

/// How long the shared run lasts (`--duration`).
const DURATION: u32 = 8;

/// One `bricks demo --duration 8`, run by the first test that needs it
/// and read by the others; `None` when not root. Call it holding
/// [`ONE_DEMO_AT_A_TIME`].
fn shared_run(test: &str) -> Option<&'static (bool, String)> {
    static RUN: OnceLock<(bool, String)> = OnceLock::new();
    if skip_unless_root(test).is_some() {
        return None;
    }
    Some(RUN.get_or_init(|| demo(&["--duration", &DURATION.to_string()])))
}

/// The rows of the live view: (seconds, the eth0 row's columns, the eth1
/// row's columns), in the order printed.
fn rate_rows(text: &str) -> Vec<(u64, Vec<String>, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.len() > 3 && w[1] == "s" && w[2] == "eth0" {
            if let (Ok(t), Some(next)) = (w[0].parse(), lines.get(i + 1)) {
                let eth1: Vec<String> = next.split_whitespace().map(String::from).collect();
                if eth1.first().map(String::as_str) == Some("eth1") {
                    let eth0 = w[2..].iter().map(|s| s.to_string()).collect();
                    rows.push((t, eth0, eth1));
                }
            }
        }
    }
    rows
}

/// `12.0k` -> 12000.
fn si(v: &str) -> f64 {
    let (num, mult) = match v.as_bytes().last() {
        Some(b'k') => (&v[..v.len() - 1], 1e3),
        Some(b'M') => (&v[..v.len() - 1], 1e6),
        Some(b'G') => (&v[..v.len() - 1], 1e9),
        _ => (v, 1.0),
    };
    num.parse::<f64>()
        .unwrap_or_else(|_| panic!("not a number: {v}"))
        * mult
}

#[test]
fn demo_sends_its_traffic_and_leaves_nothing_behind() {
    let _turn = ONE_DEMO_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((ok, text)) = shared_run("demo_sends_its_traffic_and_leaves_nothing_behind") else {
        return;
    };
    assert!(ok, "bricks demo failed:\n{text}");
    let summary = &text[text.find("\nSummary").expect("no summary")..];
    for line in [
        "PASS  ping h1 -> h2  3/3 replies",
        "PASS  ping h2 -> h1  3/3 replies",
        "PASS  ping6 h1 -> h2 3/3 replies",
        "PASS  ping6 h2 -> h1 3/3 replies",
        "PASS  tcp h1 -> h2   16 MiB in",
        "PASS  tcp6 h1 -> h2  16 MiB in",
        "checked byte for byte",
        "PASS  udp h1 -> h2   sent",
        "one-way latency p50",
    ] {
        assert!(
            summary.contains(line),
            "no `{line}` in the summary:\n{text}"
        );
    }
    // The verdict is the last line.
    let last = text[..text.find("--- stderr ---").unwrap()].trim_end();
    assert!(
        last.ends_with("\nPASS: the router forwarded all the traffic."),
        "{text}"
    );
    assert_eq!(demo_namespaces(), Vec::<String>::new(), "{text}");
    assert!(!Path::new(STATE_FILE).exists(), "{STATE_FILE} left behind");
}

#[test]
fn demo_shows_a_rate_row_every_second_from_the_start() {
    let _turn = ONE_DEMO_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((ok, text)) = shared_run("demo_shows_a_rate_row_every_second_from_the_start") else {
        return;
    };
    assert!(ok, "bricks demo failed:\n{text}");
    let rows = rate_rows(text);
    let times: Vec<u64> = rows.iter().map(|r| r.0).collect();
    // The router reports from its first second on; the demo runs for
    // DURATION seconds from when the router is up, about a second later.
    assert_eq!(
        times.first(),
        Some(&1),
        "no row for the first second:\n{text}"
    );
    assert!(
        times.windows(2).all(|w| w[1] == w[0] + 1),
        "a second without its row: {times:?}\n{text}"
    );
    assert!(
        times.len() >= DURATION as usize,
        "{} rows in {DURATION} s: {times:?}\n{text}",
        times.len()
    );
    // The first row comes before any traffic.
    let first_row = text.find("  1 s  eth0").unwrap();
    let first_ping = text.find("ping h1 -> h2:").expect("no ping");
    assert!(first_row < first_ping, "{text}");
    // Each row has fresh counters: the UDP load (20 kpkt/s for 3 s or
    // more) shows in two rows in a row, not as a second of nothing
    // between two seconds of double.
    let udp: Vec<bool> = rows.iter().map(|r| si(&r.1[1]) >= 5000.0).collect();
    assert!(
        udp.windows(2).any(|w| w[0] && w[1]),
        "the UDP load is not in two consecutive rows:\n{text}"
    );
}

#[test]
fn demo_rate_rows_have_a_drop_column_per_port() {
    let _turn = ONE_DEMO_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((ok, text)) = shared_run("demo_rate_rows_have_a_drop_column_per_port") else {
        return;
    };
    assert!(ok, "bricks demo failed:\n{text}");
    // The legend says what a drop is; the headings name the column.
    assert!(
        text.contains("  drop     packets dropped on the port"),
        "{text}"
    );
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("time  port"))
        .expect("no column headings");
    let cols: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "time", "port", "in", "pkt/s", "Mbit/s", "out", "pkt/s", "Mbit/s", "drop", "|", "core",
            "pkt/s"
        ],
        "{text}"
    );
    let rows = rate_rows(text);
    assert!(!rows.is_empty(), "{text}");
    for (t, eth0, eth1) in &rows {
        // port, in pkt/s, Mbit/s, out pkt/s, Mbit/s, drop, |, core, pkt/s
        for port in [eth0, eth1] {
            assert_eq!(port[6], "|", "second {t}: {port:?}");
            let drop: u64 = port[5]
                .parse()
                .unwrap_or_else(|_| panic!("second {t}: drop is not a count: {port:?}"));
            // Nothing is lost at these rates; a drop count at all, and a
            // small one, is what the column promises.
            assert!(drop <= 1000, "second {t}: {drop} drops\n{text}");
        }
    }
    // The final table has the column too.
    assert!(text.contains("out bytes  dropped"), "{text}");
}

#[test]
fn demo_tcp_line_shows_the_transfers_own_rate() {
    let _turn = ONE_DEMO_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((ok, text)) = shared_run("demo_tcp_line_shows_the_transfers_own_rate") else {
        return;
    };
    assert!(ok, "bricks demo failed:\n{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("tcp h1 -> h2: 16 MiB in "))
        .unwrap_or_else(|| panic!("no TCP result line:\n{text}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    // tcp h1 -> h2: 16 MiB in S s = R Mbit/s, checked byte for byte
    let (secs, rate): (f64, f64) = (w[7].parse().unwrap(), w[10].parse().unwrap());
    assert_eq!((w[8], w[9], w[11]), ("s", "=", "Mbit/s,"), "{line}");
    assert!(rate > 1.0, "{line}");
    // The rate is the transfer's own: its bytes over its duration.
    let expect = (16u64 << 20) as f64 * 8.0 / 1e6 / secs;
    assert!(
        (rate - expect).abs() <= expect * 0.05 + 1.0,
        "{line}: 16 MiB in {secs} s is {expect:.0} Mbit/s"
    );
    assert!(line.ends_with("checked byte for byte"), "{line}");
}

#[test]
fn demo_prints_a_router_command_that_runs() {
    let _turn = ONE_DEMO_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((ok, text)) = shared_run("demo_prints_a_router_command_that_runs") else {
        return;
    };
    assert!(ok, "bricks demo failed:\n{text}");
    // The command, its continuation lines joined as a shell would.
    let start = text
        .find("  ip netns exec bdemo-r ")
        .unwrap_or_else(|| panic!("no router command:\n{text}"));
    let mut command = String::new();
    for l in text[start..].lines() {
        match l.strip_suffix(" \\") {
            Some(part) => command.push_str(part),
            None => {
                command.push_str(l);
                break;
            }
        }
        command.push(' ');
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[..4], ["ip", "netns", "exec", "bdemo-r"], "{command}");
    let (program, config) = (words[4], words[6]);
    assert_eq!(words[5], "run", "{command}");
    // Paths as the user's shell sees them, from where the demo ran.
    let program_path = root().join(program);
    assert!(
        program_path.exists(),
        "{program} does not exist (from {}):\n{text}",
        root().display()
    );
    assert!(root().join(config).exists(), "{config}:\n{text}");
    // It is a bricks that reads the same configuration.
    let out = output_timeout(
        Command::new(&program_path)
            .current_dir(root())
            .args(["check", config]),
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(
        out.status.success(),
        "{program} check {config}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn demo_cleans_up_after_a_killed_run() {
    if skip_unless_root("demo_cleans_up_after_a_killed_run").is_some() {
        return;
    }
    let _turn = ONE_DEMO_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());

    // A demo that runs until it is stopped, killed once its router is up:
    // its namespaces stay, and so may its router for a moment (it ends at
    // its next write to the dead demo's pipe).
    let mut first = ChildGuard::spawn(
        Command::new(env!("CARGO_BIN_EXE_bricks"))
            .current_dir(root())
            .args(["demo", "--tcp-mib", "1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )
    .unwrap();
    let out = first.child_mut().stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let end = Instant::now() + Duration::from_secs(60);
    let mut seen = String::new();
    while !seen.contains("Router up") {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                seen.push_str(&l);
                seen.push('\n');
            }
            Err(_) => panic!("the first demo's router did not come up:\n{seen}"),
        }
    }
    first.kill();
    let state = std::fs::read_to_string(STATE_FILE).expect("no state file of the killed run");
    let router: Vec<KillOnDrop> = state
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.first() == Some(&"router"))
                .then(|| KillOnDrop(w[1].parse().unwrap(), w[2].parse().unwrap()))
        })
        .collect();
    assert_eq!(router.len(), 1, "{state}");
    assert!(demo_namespaces().len() >= 3, "{:?}", demo_namespaces());

    // What a killed run may leave running: a ping in one of its
    // namespaces, recorded in the state file. And what it must not touch:
    // a process the state file names that is no bricks or ping (a PID
    // reused since), and a stray namespace with the demo's prefix.
    let mut ping = ChildGuard::spawn(
        Command::new("ip")
            .args([
                "netns", "exec", "bdemo-h1", "ping", "-n", "-i", "0.5", "10.1.0.1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .unwrap();
    let mut bystander = ChildGuard::spawn(Command::new("sleep").arg("600")).unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while start_time(ping.id()).is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (ping_start, by_start) = (
        start_time(ping.id()).unwrap(),
        start_time(bystander.id()).unwrap(),
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(STATE_FILE)
        .unwrap();
    let lines = format!(
        "ping {} {ping_start}\nrouter {} {by_start}\n",
        ping.id(),
        bystander.id()
    );
    std::io::Write::write_all(&mut f, lines.as_bytes()).unwrap();
    drop(f);
    bricks_netns::ip(&["netns", "add", "bdemo-stray"]).unwrap();

    let (ok, text) = demo(&["--duration", "3", "--tcp-mib", "1"]);
    assert!(ok, "the second demo failed:\n{text}");
    assert!(
        text.contains(&format!("Ended a leftover ping (PID {})", ping.id())),
        "{text}"
    );
    assert!(
        ping.wait_timeout(Duration::from_secs(5)).is_some(),
        "the leftover ping still runs"
    );
    assert!(
        text.contains("Deleting leftover namespaces") && text.contains("bdemo-stray"),
        "{text}"
    );
    for r in &router {
        assert!(!alive(r.0, r.1), "the leftover router still runs");
    }
    assert!(
        bystander.try_wait().is_none(),
        "a process that was not the demo's was killed"
    );
    assert_eq!(demo_namespaces(), Vec::<String>::new(), "{text}");
    assert!(!Path::new(STATE_FILE).exists());
}

/// What the in-memory demo must show: both hosts' UDP forwarded with the
/// TTL decremented, ARP answered and asked on both sides, and the ICMP
/// time exceeded for the packet sent with TTL 1.
fn check_in_memory(text: &str) {
    for line in [
        "In memory: conf/dual-stack-router.click",
        "1 x ARP reply 10.1.0.1 is-at 02:00:00:00:01:01",
        "1 x ARP who-has 10.1.0.2",
        "1 x ARP who-has 10.2.0.2",
        "8 x IPv4 10.1.0.2 > 10.2.0.2 UDP, TTL 63",
        "8 x IPv4 10.2.0.2 > 10.1.0.2 UDP, TTL 63",
        "1 x IPv4 10.1.0.1 > 10.1.0.2 ICMP time exceeded",
        "dt1 (DecIPTTL): expired=1",
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
    assert!(!text.contains("not from our MAC"), "{text}");
    assert!(!text.contains("bad checksum"), "{text}");
}

#[test]
fn the_in_memory_demo_routes_its_scripted_frames() {
    let (ok, text) = demo(&["--in-memory"]);
    assert!(ok, "{text}");
    check_in_memory(&text);
}

#[test]
fn without_root_the_demo_says_what_it_needs_and_runs_in_memory() {
    let bin = env!("CARGO_BIN_EXE_bricks");
    let mut cmd = if bricks_netns::is_root() {
        // Drop to nobody to see what a user without root sees.
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("SKIP: root, and no setpriv to drop privileges with");
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    let out = output_timeout(cmd.current_dir(root()).arg("demo"), Duration::from_secs(60)).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("needs root, or the capabilities CAP_NET_ADMIN and CAP_SYS_ADMIN"),
        "{text}"
    );
    check_in_memory(&text);
}
