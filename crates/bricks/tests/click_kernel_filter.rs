//! Click's KernelFilter end to end, through the `bricks` binary.
//!
//! Against the real kernel (root): a router namespace joined by a veth
//! pair to a host namespace; bricks runs in the router namespace with
//! `KernelFilter(drop dev kf0)`, and while it runs `iptables -S INPUT`
//! there shows the rule and a ping from the host to kf0's address gets no
//! answer (FromDevice still sees it); once the router stops (a Script's
//! `stop`, `--duration`, SIGTERM, SIGINT) the rule is gone and the ping is
//! answered again. A failing IPTABLES_COMMAND keeps the router from
//! starting and undoes the rules added before it.
//!
//! Without root, a stand-in for iptables (a shell script that logs its
//! arguments) shows when the rules change: never for `bricks check`, once
//! per run whatever the number of workers, newest deleted first, and on a
//! hot swap. Nothing here runs iptables outside a test namespace.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod bounded;
use bounded::{output, run, text, wait_bounded, DEADLINE};

use bricks_netns::Network;

/// The rule `KernelFilter(drop dev kf0)` adds, as `iptables -S` prints it.
const RULE: &str = "-A INPUT -i kf0 -j DROP";

/// The router's address on kf0, which the host pings.
const ROUTER: &str = "10.77.0.1";

/// Whether iptables is installed where KernelFilter looks for it; `false`
/// (with the reason printed) skips a test, except under CI, where a
/// missing iptables is a failure (scripts/setup installs it).
fn have_iptables(test: &str) -> bool {
    if ["/sbin/iptables", "/usr/sbin/iptables"]
        .iter()
        .any(|p| Path::new(p).exists())
    {
        return true;
    }
    let reason = format!("SKIP {test}: iptables is not installed (Debian package `iptables`)");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{reason} (CI=true: this test must run)");
    }
    eprintln!("{reason}");
    false
}

/// A router namespace `r` (kf0, 10.77.0.1/24) and a host namespace `h`
/// (kf1, 10.77.0.2/24) joined by a veth pair, named with a prefix of this
/// process and `tag`; deleted on drop. `None`: the test is skipped.
fn network(test: &str, tag: &str) -> Option<Network> {
    if bricks_netns::skip_unless_root(test).is_some() || !have_iptables(test) {
        return None;
    }
    let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
    net.add_namespace("r").unwrap();
    net.add_namespace("h").unwrap();
    net.add_link("r", "kf0", "h", "kf1", 1).unwrap();
    net.add_addr("r", "kf0", "10.77.0.1/24").unwrap();
    net.add_addr("h", "kf1", "10.77.0.2/24").unwrap();
    assert!(
        pings(&net),
        "the host cannot ping the router before any rule"
    );
    assert!(rules(&net).is_empty(), "{:?}", rules(&net));
    Some(net)
}

/// The rules of the router namespace's INPUT chain (`-A` lines of
/// `iptables -S INPUT`).
fn rules(net: &Network) -> Vec<String> {
    let o = bricks_netns::output_timeout(
        net.exec("r", &["iptables", "-S", "INPUT"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(o.status.success(), "iptables -S: {}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("-A "))
        .map(str::to_string)
        .collect()
}

/// Whether one ping from the host to the router's kf0 is answered (one
/// packet, one second at most).
fn pings(net: &Network) -> bool {
    net.exec("h", &["ping", "-n", "-q", "-c", "1", "-W", "1", ROUTER])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// `bricks run ARGS` in the router namespace, stdout and stderr piped.
fn spawn_router(net: &Network, args: &[&str]) -> Child {
    let mut argv = vec![env!("CARGO_BIN_EXE_bricks"), "run"];
    argv.extend_from_slice(args);
    net.exec("r", &argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `ready`, failing if `child` ends first or DEADLINE passes
/// (the child is killed then).
fn wait_for(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            let o = wait_output(child);
            panic!(
                "bricks ended ({status}) before {what}\nstderr:\n{}",
                text(&o.stderr)
            );
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: not within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The output of a child that has ended.
fn wait_output(child: &mut Child) -> Output {
    use std::io::Read as _;
    let status = child.wait().unwrap();
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_end(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    Output {
        status,
        stdout,
        stderr,
    }
}

/// While the rule is in place: exactly one of it, and the host's ping to
/// kf0 goes unanswered.
fn assert_filtered(net: &Network) {
    assert_eq!(rules(net), [RULE]);
    assert!(
        !pings(net),
        "the kernel answered a ping on a filtered interface"
    );
}

/// After the router stopped: no rule, and the ping is answered again.
fn assert_restored(net: &Network) {
    assert!(rules(net).is_empty(), "left behind: {:?}", rules(net));
    assert!(pings(net), "no answer after the router stopped");
}

#[test]
fn a_script_stop_deletes_the_rule_added_once_for_two_workers() {
    let test = "a_script_stop_deletes_the_rule_added_once_for_two_workers";
    let Some(net) = network(test, "kfa") else {
        return;
    };
    let mut child = spawn_router(
        &net,
        &[
            "--quiet",
            "--threads",
            "2",
            "--duration",
            "20",
            "-e",
            "kf :: KernelFilter(drop dev kf0);\n\
             Script(wait 0.2, read kf.rules, wait 3, stop);",
        ],
    );
    wait_for(&mut child, "the rule is in place", || {
        !rules(&net).is_empty()
    });
    assert_filtered(&net);
    let o = wait_bounded(child, test);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The `rules` handler gives the command that added the rule (a
    // Script's `read` prints on standard error, as Click's).
    let err = text(&o.stderr);
    assert!(
        err.contains("kf.rules:\n/sbin/iptables -A INPUT -i kf0 -j DROP\n")
            || err.contains("kf.rules:\n/usr/sbin/iptables -A INPUT -i kf0 -j DROP\n"),
        "{err}"
    );
    assert_restored(&net);
}

#[test]
fn duration_ends_the_run_and_the_rule_fromdevice_still_sees_the_ping() {
    let test = "duration_ends_the_run_and_the_rule_fromdevice_still_sees_the_ping";
    let Some(net) = network(test, "kfb") else {
        return;
    };
    let mut child = spawn_router(
        &net,
        &[
            "--quiet",
            "--duration",
            "3",
            "-e",
            "KernelFilter(drop dev kf0);\n\
             FromDevice(kf0, BACKEND packet) -> c :: Counter -> Discard;",
            "-h",
            "c.count",
        ],
    );
    wait_for(&mut child, "the rule is in place", || {
        !rules(&net).is_empty()
    });
    assert_filtered(&net);
    let o = wait_bounded(child, test);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    // The kernel dropped the echo request, but the router read it.
    let count: u64 = text(&o.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{}", text(&o.stdout)));
    assert!(count >= 1, "FromDevice saw nothing\n{err}");
    assert_restored(&net);
}

#[test]
fn sigterm_and_sigint_stop_the_router_and_delete_the_rule() {
    let test = "sigterm_and_sigint_stop_the_router_and_delete_the_rule";
    let Some(net) = network(test, "kfc") else {
        return;
    };
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // No end of its own: only the signal stops it.
        let mut child = spawn_router(
            &net,
            &[
                "--quiet",
                "-e",
                "KernelFilter(drop dev kf0); TimedSource(0.05) -> Discard;",
            ],
        );
        wait_for(&mut child, "the rule is in place", || {
            !rules(&net).is_empty()
        });
        assert_filtered(&net);
        // `ip netns exec` execs bricks: the child's PID is bricks'.
        bricks_netns::kill_pid(child.id(), signal);
        let o = wait_bounded(child, test);
        assert!(o.status.success(), "signal {signal}: {}", text(&o.stderr));
        assert_restored(&net);
    }
}

/// A stand-in for iptables in a temporary directory, run as `/bin/sh
/// SCRIPT` (exec(2) of a file just written can fail with ETXTBSY while
/// another test thread forks): it appends its arguments to a log, fails
/// with status 3 and a message for a device whose name begins with
/// `kfbad`, and otherwise runs the real iptables when `real` is set or
/// succeeds.
struct FakeIptables {
    dir: tempfile::TempDir,
    log: PathBuf,
}

impl FakeIptables {
    fn new(real: bool) -> FakeIptables {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let then = if real {
            "exec iptables \"$@\""
        } else {
            "exit 0"
        };
        std::fs::write(
            dir.path().join("iptables"),
            format!(
                "echo \"$*\" >> '{}'\n\
                 case \"$4\" in kfbad*) echo \"kfbad: refused by the test\" >&2; exit 3;; esac\n\
                 {then}\n",
                log.display()
            ),
        )
        .unwrap();
        FakeIptables { dir, log }
    }

    /// The IPTABLES_COMMAND argument that runs it.
    fn keyword(&self) -> String {
        format!(
            "IPTABLES_COMMAND \"/bin/sh '{}'\"",
            self.dir.path().join("iptables").display()
        )
    }

    /// Its calls so far, one line of arguments each.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

#[test]
fn a_failing_command_keeps_the_router_from_starting_and_undoes_its_rules() {
    let test = "a_failing_command_keeps_the_router_from_starting_and_undoes_its_rules";
    let Some(net) = network(test, "kfd") else {
        return;
    };
    let fake = FakeIptables::new(true);
    let config = format!(
        "KernelFilter(drop dev kf0, drop dev kf9, drop dev kfbad, {});\n\
         InfiniteSource(LIMIT 1000) -> c :: Counter -> Discard;",
        fake.keyword()
    );
    let child = spawn_router(&net, &["--quiet", "-e", &config, "-h", "c.count"]);
    let o = wait_bounded(child, test);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("-A INPUT -i kfbad -j DROP` failed (exit status: 3): kfbad: refused by the test; the router does not start (the 2 rules added before it were deleted again)"),
        "{err}"
    );
    // No packet moved.
    assert_eq!(text(&o.stdout), "0\n", "{err}");
    assert_eq!(
        fake.calls(),
        [
            "-A INPUT -i kf0 -j DROP",
            "-A INPUT -i kf9 -j DROP",
            "-A INPUT -i kfbad -j DROP",
            "-D INPUT -i kf9 -j DROP",
            "-D INPUT -i kf0 -j DROP",
        ]
    );
    assert_restored(&net);
}

#[test]
fn a_command_that_fails_is_named_and_nothing_runs() {
    // `false` touches nothing: this runs without root, on the host. A
    // driver script that would take a stop for one of its events (its
    // `wait_stop`) does not keep the router running either.
    for (config, threads) in [
        ("", "1"),
        ("", "3"),
        ("DriverManager(wait_stop, wait 10, stop);\n", "1"),
        ("Script(TYPE DRIVER, wait_stop, wait 10, stop);\n", "2"),
    ] {
        let config = format!(
            "{config}kf :: KernelFilter(drop dev eth0, IPTABLES_COMMAND false);\n\
             InfiniteSource(LIMIT 100000) -> c :: Counter -> Discard;"
        );
        let start = Instant::now();
        let o = run(&config, &["--threads", threads, "-h", "c.count"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{config}\n{err}");
        assert_eq!(
            err,
            "error: kf: `false -A INPUT -i eth0 -j DROP` failed (exit status: 1) with no \
             output; the router does not start\n",
            "{config}"
        );
        assert_eq!(text(&o.stdout), "0\n", "{config}\n{err}");
        assert!(start.elapsed() < Duration::from_secs(5), "{config}");
    }
}

#[test]
fn rules_change_once_per_run_never_when_checked() {
    let fake = FakeIptables::new(false);
    let config = format!(
        "kf :: KernelFilter(drop dev eth0, drop dev eth1, {});\n\
         TimedSource(0.05, LIMIT 3, STOP true) -> Discard;",
        fake.keyword()
    );
    let o = output(&["check", "-e", &config]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!fake.log.exists(), "check ran {:?}", fake.calls());
    // Three workers, one set of rules, deleted newest first.
    let o = run(&config, &["--threads", "3"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        fake.calls(),
        [
            "-A INPUT -i eth0 -j DROP",
            "-A INPUT -i eth1 -j DROP",
            "-D INPUT -i eth1 -j DROP",
            "-D INPUT -i eth0 -j DROP",
        ]
    );
}

#[test]
fn configuration_errors_are_clicks() {
    for (config, want) in [
        (
            "KernelFilter(accept dev eth0)",
            "arguments must follow 'drop dev DEVNAME'",
        ),
        (
            "KernelFilter(drop dev eth0 eth1)",
            "arguments must follow 'drop dev DEVNAME'",
        ),
        (
            "KernelFilter(drop dev abcdefghijklmnop)",
            "bad DEVNAME `abcdefghijklmnop`: 16 bytes long",
        ),
        (
            "KernelFilter(drop dev \"x;reboot\", drop dev a/b)",
            "bad DEVNAME `a/b`",
        ),
        (
            "KernelFilter(drop dev eth0, IPTABLES_COMMAND \"iptables; reboot\")",
            "bad argument IPTABLES_COMMAND: `;` means something only to a shell",
        ),
    ] {
        let o = output(&["check", "-e", config]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{config}");
        assert!(err.contains(want), "{config}:\n{err}");
    }
}

#[test]
fn a_hot_swap_keeps_unchanged_rules_and_replaces_changed_ones() {
    let fake = FakeIptables::new(false);
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("router.click");
    let err_path = dir.path().join("err");
    let config = |dev: &str| {
        format!(
            "kf :: KernelFilter(drop dev {dev}, {});\nTimedSource(0.05) -> Discard;\n",
            fake.keyword()
        )
    };
    std::fs::write(&conf, config("eth0")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["run", "--quiet", "--duration", "20"])
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let swaps = |n: usize| {
        std::fs::read_to_string(&err_path)
            .unwrap_or_default()
            .matches("ok: hot-swapped")
            .count()
            >= n
    };
    wait_for(&mut child, "the first rule", || fake.calls().len() == 1);
    // The same configuration: the rule stays as it is.
    bricks_netns::kill_pid(child.id(), libc::SIGHUP);
    wait_for(&mut child, "the first swap", || swaps(1));
    assert_eq!(fake.calls(), ["-A INPUT -i eth0 -j DROP"]);
    // Another device: the old rule goes, the new one comes.
    std::fs::write(&conf, config("eth1")).unwrap();
    bricks_netns::kill_pid(child.id(), libc::SIGHUP);
    wait_for(&mut child, "the second swap", || swaps(2));
    bricks_netns::kill_pid(child.id(), libc::SIGTERM);
    let status = wait_bounded(child, "hot swap").status;
    let err = std::fs::read_to_string(&err_path).unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(
        fake.calls(),
        [
            "-A INPUT -i eth0 -j DROP",
            "-D INPUT -i eth0 -j DROP",
            "-A INPUT -i eth1 -j DROP",
            "-D INPUT -i eth1 -j DROP",
        ],
        "{err}"
    );
}
