//! The command line as a user meets it: checking configurations, error
//! messages and exit codes, running, and the element manuals.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("bricks runs")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Checks `config` and returns (exit code, stderr).
fn check(config: &str) -> (i32, String) {
    let o = bricks(&["check", "-e", config]);
    (o.status.code().unwrap_or(-1), stderr(&o))
}

#[test]
fn every_example_configuration_checks() {
    let mut n = 0;
    for entry in std::fs::read_dir(root().join("conf")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "click") {
            let p = path.to_string_lossy().into_owned();
            let o = bricks(&[
                "check",
                &p,
                "-d",
                "eth0=pcap:tests/golden/ip-router/eth0-in.pcap,/dev/null",
                "-d",
                "eth1=pcap:tests/golden/ip-router/eth1-in.pcap,/dev/null",
            ]);
            assert!(o.status.success(), "{p}:\n{}", stderr(&o));
            assert!(stdout(&o).contains("ok: "), "{p}");
            n += 1;
        }
    }
    assert!(n >= 1);
}

#[test]
fn check_prints_the_graph_with_push_and_pull() {
    let o = bricks(&[
        "check",
        "-e",
        "src :: InfiniteSource -> q :: Queue -> sink :: Discard",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("src :: InfiniteSource  [task: source]"),
        "{out}"
    );
    assert!(out.contains("out 0 push -> [0]q"), "{out}");
    assert!(out.contains("out 0 pull -> [0]sink"), "{out}");
    assert!(out.contains("sink :: Discard  [task]"), "{out}");
    assert!(out.contains("ok: 3 elements, 2 connections"), "{out}");
}

#[test]
fn unknown_class_is_located_underlined_and_suggested() {
    let (code, err) = check("InfiniteSource -> Queue -> Discrad;");
    assert_eq!(code, 2);
    assert!(err.contains("error: undeclared element `Discrad`"), "{err}");
    assert!(err.contains("<expr>:1:28"), "{err}");
    assert!(err.contains("^^^^^^^"), "{err}");
    assert!(err.contains("did you mean `Discard`?"), "{err}");
}

#[test]
fn a_click_element_bricks_lacks_is_named_as_such() {
    for class in ["PerfCountAccum", "RFC2507Comp", "SpinlockAcquire"] {
        let (code, err) = check(&format!("InfiniteSource -> {class} -> Discard;"));
        assert_eq!(code, 2);
        assert!(
            err.contains(&format!(
                "error: `{class}` is a Click element that bricks does not implement yet"
            )),
            "{err}"
        );
        assert!(
            err.contains("see `bricks elements` for the ones it has"),
            "{err}"
        );
        assert!(!err.contains("did you mean"), "{err}");
    }
    let o = bricks(&["elements", "RFC2507Comp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`RFC2507Comp` is a Click element that bricks does not implement yet"),
        "{}",
        stderr(&o)
    );
    // Typos of bricks elements are still caught as typos.
    let (_, err) = check("InfiniteSource -> ARPQueirer(1.0.0.1, 0:0:0:0:0:1) -> Discard;");
    assert!(err.contains("did you mean `ARPQuerier`?"), "{err}");
    let (_, err) = check("InfiniteSource -> Nonesuch -> Discard;");
    assert!(err.contains("undeclared element `Nonesuch`"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn unknown_classes_and_bad_arguments_are_reported_in_one_pass() {
    let (code, err) = check(
        "InfiniteSource(LIMT 5) -> RFC2507Comp -> Discrad; Idle -> c :: Counter(X 1) -> Discard;",
    );
    assert_eq!(code, 2);
    assert!(err.contains("`RFC2507Comp` is a Click element"), "{err}");
    assert!(err.contains("undeclared element `Discrad`"), "{err}");
    assert!(err.contains("unknown keyword LIMT"), "{err}");
    assert!(err.contains("did you mean LIMIT?"), "{err}");
    assert!(err.contains("c (Counter): unknown keyword X"), "{err}");
    assert!(err.contains("4 errors found"), "{err}");
}

#[test]
fn a_define_the_configuration_never_uses_is_warned_about() {
    let config = "define($N 3) InfiniteSource(LIMIT $N) -> Discard;";
    let o = bricks(&["check", "-e", config, "-D", "NN=5", "-D", "N=4"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("warning: -D NN: the configuration never defines or uses `$NN`"),
        "{err}"
    );
    assert!(err.contains("(did you mean N?)"), "{err}");
    assert!(!err.contains("-D N:"), "{err}");
    let o = bricks(&["check", "-e", config, "-D", "N=4"]);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn to_host_without_a_host_path_is_warned_about() {
    let o = bricks(&["run", "-e", "InfiniteSource(LIMIT 3) -> th :: ToHost(eth0)"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "warning: th :: ToHost(eth0): packets to the host's stack are counted and dropped: \
             no FromHost(eth0, ...), KernelTap or KernelTun with DEVNAME eth0 makes a device"
        ),
        "{err}"
    );
    assert!(err.contains("th (ToHost): drops=3"), "{err}");
    // Bound to a capture, the packets are recorded: no warning.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("host.pcap");
    let o = bricks(&[
        "run",
        "-e",
        "InfiniteSource(LIMIT 3) -> ToHost",
        "-d",
        &format!("host=pcap:,{}", out.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ToHost@2 (ToHost): count=3"),
        "{}",
        stderr(&o)
    );
}

/// ToHostSniffers bound to a capture records there (no interface, no
/// root); ToHost with SNIFFERS true is the same element, with no warning
/// about a host device.
#[test]
fn to_host_sniffers_records_to_a_bound_capture() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    let o = bricks(&[
        "run",
        "-e",
        "InfiniteSource(LIMIT 3) -> t :: Tee; t[0] -> ToHostSniffers(eth0); \
         t[1] -> k :: ToHost(eth1, SNIFFERS true)",
        "-d",
        &format!("eth0=pcap:,{}", a.display()),
        "-d",
        &format!("eth1=pcap:,{}", b.display()),
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("warning"), "{err}");
    assert!(
        err.contains("ToHostSniffers@3 (ToHostSniffers): count=3"),
        "{err}"
    );
    assert!(err.contains("k (ToHost): count=3"), "{err}");
    for f in [a, b] {
        // A classic pcap file: a 24-byte header, then per packet a
        // 16-byte record header and InfiniteSource's default data (Click's
        // 69 bytes).
        let len = std::fs::metadata(&f).unwrap().len();
        assert_eq!(len, 24 + 3 * (16 + 69), "{}", f.display());
    }
}

#[test]
fn unknown_keyword_is_named_and_suggested() {
    let (code, err) = check("InfiniteSource(LIMT 5) -> Discard;");
    assert_eq!(code, 2);
    assert!(err.contains("unknown keyword LIMT"), "{err}");
    assert!(err.contains("did you mean LIMIT?"), "{err}");
    assert!(err.contains("<expr>:1:16"), "{err}");
}

#[test]
fn bad_argument_value_names_the_argument() {
    let (code, err) = check("InfiniteSource(BURST lots) -> Discard;");
    assert_eq!(code, 2);
    assert!(
        err.contains("bad argument BURST: expected unsigned integer, found `lots`"),
        "{err}"
    );
}

#[test]
fn unconnected_port_is_an_error() {
    let (code, err) = check("InfiniteSource -> p :: PaintTee(1) -> Discard;");
    assert_eq!(code, 2);
    assert!(err.contains("`p :: PaintTee` output 1 unused"), "{err}");
}

#[test]
fn push_to_pull_without_queue_is_an_error() {
    // WorkloadSource pushes; RoundRobinSched pulls. (InfiniteSource is
    // agnostic and would simply be pulled, as in Click.)
    let (code, err) = check("WorkloadSource -> RoundRobinSched -> Discard;");
    assert_eq!(code, 2);
    assert!(
        err.contains("push output 0 of `WorkloadSource@1` connected to pull input 0"),
        "{err}"
    );
    assert!(err.contains("put a Queue between them"), "{err}");
}

#[test]
fn port_out_of_range_is_an_error() {
    let (code, err) = check("s :: InfiniteSource; s[1] -> Discard; s -> Discard;");
    assert_eq!(code, 2);
    assert!(
        err.contains("output port 1 out of range: `s` (InfiniteSource) has 1 output"),
        "{err}"
    );
}

#[test]
fn redeclared_name_is_an_error() {
    let (code, err) = check("a :: Counter; a :: Discard; InfiniteSource -> a -> Discard;");
    assert_eq!(code, 2);
    assert!(err.contains("redeclaration of element `a`"), "{err}");
    assert!(err.contains("previously declared here"), "{err}");
}

#[test]
fn push_output_used_twice_is_an_error() {
    let (code, err) = check("s :: InfiniteSource; s -> Discard; s -> Discard;");
    assert_eq!(code, 2);
    assert!(
        err.contains("illegal reuse of `s :: InfiniteSource` push output 0"),
        "{err}"
    );
    assert!(err.contains("Tee"), "{err}");
}

#[test]
fn several_errors_are_reported_together() {
    let (code, err) = check("InfiniteSource -> Discrad; InfiniteSource -> Countr -> Discard;");
    assert_eq!(code, 2);
    assert!(
        err.contains("`Discrad`") && err.contains("`Countr`"),
        "{err}"
    );
    assert!(err.contains("2 errors found"), "{err}");
}

#[test]
fn syntax_error_exit_code_is_two() {
    let (code, err) = check("InfiniteSource( -> Discard;");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("error"), "{err}");
}

#[test]
fn run_delivers_everything_and_prints_counters() {
    let o = bricks(&[
        "run",
        "-e",
        "InfiniteSource(LIMIT 1000, BURST 7) -> c :: Counter -> q :: Queue(10000) -> u :: Unqueue(3) -> d :: Discard",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    // The run ends because the source finished, and the queue was drained
    // first: all 1000 packets reach the sink.
    assert!(err.contains("c (Counter): count=1000"), "{err}");
    assert!(err.contains("d (Discard): count=1000"), "{err}");
    // Drained: the queue reports what it took, and no packets left in it.
    assert!(err.contains("q (Queue): highwater_length="), "{err}");
    assert!(!err.contains(" length="), "{err}");
    assert!(
        err.contains("stopped: every source is done and the graph has drained"),
        "{err}"
    );
    assert!(!err.contains("SourcesDone"), "{err}");
}

#[test]
fn run_with_compound_element_and_define() {
    let config = "define($N 25)
        elementclass Twice { $n | input -> Counter -> output; }
        InfiniteSource(LIMIT $N) -> t :: Twice(1) -> d :: Discard;";
    let o = bricks(&["run", "-e", config]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("d (Discard): count=25"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sigterm_stops_a_run_cleanly() {
    use std::io::{BufRead, BufReader, Read};
    let mut child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args([
            "run",
            "-e",
            "RatedSource(RATE 100) -> Print(ready, 0) -> q :: Queue -> Discard",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the router runs (its first packet is printed), however
    // slow the machine, then stop it.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("ready") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "router exited early");
    }
    // SIGTERM to our own child, by its PID.
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{rest}");
    assert!(
        rest.contains("stopped: interrupted by a signal (Ctrl-C or SIGTERM)"),
        "{rest}"
    );
    assert!(rest.contains("q (Queue): "), "{rest}");
    assert!(!rest.contains(" length="), "{rest}");
}

#[test]
fn elements_lists_every_class_and_prints_manuals() {
    let o = bricks(&["elements"]);
    assert!(o.status.success());
    let list = stdout(&o);
    for class in [
        "ARPQuerier",
        "ARPResponder",
        "CheckIPHeader",
        "Classifier",
        "Counter",
        "DecIPTTL",
        "Discard",
        "EtherEncap",
        "EtherRewrite",
        "FixIPSrc",
        "FromDump",
        "ICMPError",
        "IPClassifier",
        "IPFragmenter",
        "IPGWOptions",
        "InfiniteSource",
        "Queue",
        "StaticIPLookup",
        "ToDump",
        "WorkloadSource",
    ] {
        assert!(list.contains(class), "{class} missing from\n{list}");
    }
    let o = bricks(&["elements", "Queue"]);
    let man = stdout(&o);
    for section in [
        "SYNOPSIS",
        "PORTS",
        "DESCRIPTION",
        "KEYWORDS",
        "CAPACITY",
        "COUNTERS",
        "EXAMPLE",
    ] {
        assert!(man.contains(section), "{section} missing:\n{man}");
    }
    let o = bricks(&["elements", "Queu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("did you mean `Queue`?"));
}

#[test]
fn help_explains_the_commands() {
    let o = bricks(&["--help"]);
    let h = stdout(&o);
    for word in ["check", "run", "elements", "bench", "Examples"] {
        assert!(h.contains(word), "{word}:\n{h}");
    }
    let o = bricks(&["run", "--help"]);
    assert!(stdout(&o).contains("NAME=pcap:IN[,OUT]"));
    // Every subcommand says what it does and shows an example.
    for cmd in [
        "check", "run", "elements", "routes", "demo", "gen", "sink", "cluster", "bench",
    ] {
        let h = stdout(&bricks(&[cmd, "--help"]));
        assert!(h.contains("Examples:"), "{cmd} --help:\n{h}");
    }
    // The benches say which need root and which run in memory.
    let h = stdout(&bricks(&["bench", "--help"]));
    assert!(h.contains("as root"), "{h}");
    for (bench, needs) in [
        ("core", "no root"),
        ("lpm", "no root"),
        ("io", "Needs root"),
        ("ipsec", "needs root"),
        ("cluster", "needs root"),
    ] {
        let h = stdout(&bricks(&["bench", bench, "--help"]));
        assert!(h.contains(needs), "bench {bench} --help:\n{h}");
        assert!(h.contains("Examples:"), "bench {bench} --help:\n{h}");
    }
}

#[test]
fn routes_gen_stats_and_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("table.txt");
    let t = table.to_string_lossy().into_owned();
    let o = bricks(&[
        "routes", "gen", "--v4", "5000", "--v6", "1000", "--seed", "3", "-o", &t,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = bricks(&["routes", "stats", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("5000 IPv4 and 1000 IPv6 prefixes"), "{out}");
    for algo in ["dir24-8", "trie4", "poptrie6"] {
        assert!(out.contains(algo), "{algo}:\n{out}");
    }
    // Look up an address inside the first route of the file, and one in
    // unallocated space.
    let text = std::fs::read_to_string(&table).unwrap();
    let first = text
        .lines()
        .find(|l| !l.starts_with('#') && l.contains('.'))
        .unwrap();
    let prefix = first.split_whitespace().next().unwrap();
    let addr = prefix.split('/').next().unwrap();
    let o = bricks(&["routes", "lookup", &t, addr, "240.0.0.1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with(addr), "{out}");
    assert!(lines[0].contains("output"), "{out}");
    assert!(
        lines[1].starts_with(
            "240.0.0.1 no route (the table has 5000 IPv4 prefixes and no default route; \
             the closest is "
        ),
        "{out}"
    );
}

#[test]
fn the_readme_route_lookups_answer_on_the_generated_table() {
    // The README's own commands, read from it so that they cannot rot.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let command = |prefix: &str| -> Vec<String> {
        let line = readme
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("README has no `{prefix}` line"));
        let line = line.split('#').next().unwrap();
        line.split_whitespace().skip(1).map(String::from).collect()
    };
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("table.txt").to_string_lossy().into_owned();
    let mut gen = command("bricks routes gen");
    *gen.last_mut().unwrap() = table.clone();
    let o = bricks(&gen.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let mut found = 0;
    for line in readme.lines().map(str::trim) {
        if !line.starts_with("bricks routes lookup table.txt") {
            continue;
        }
        let mut args: Vec<String> = command(line.split('#').next().unwrap().trim());
        args[2] = table.clone();
        let addrs = args.len() - 3;
        let o = bricks(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let answers: Vec<&str> = out.lines().collect();
        assert_eq!(answers.len(), addrs, "{out}");
        for a in answers {
            // A route names its prefix and output; a miss says why.
            assert!(
                a.contains(" output ") || a.contains("no route (the table has 1000000 IPv4"),
                "{line}: {out}"
            );
        }
        found += out.matches(" output ").count();
    }
    assert!(found >= 3, "the README's lookups should mostly find routes");
}

#[test]
fn routes_peer_options_reach_the_loader() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.txt");
    std::fs::write(&f, "10.0.0.0/8 1\n").unwrap();
    let p = f.to_string_lossy().into_owned();
    let o = bricks(&["routes", "stats", "--peer", "192.0.2.1", &p]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("peer 192.0.2.1 was asked for, but this is a text route file"),
        "{}",
        stderr(&o)
    );
    let o = bricks(&["routes", "lookup", "--peer-as", "701", &p, "10.0.0.1"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("peer AS 701 was asked for"),
        "{}",
        stderr(&o)
    );
    let o = bricks(&[
        "routes",
        "stats",
        "--peer",
        "192.0.2.1",
        "--peer-as",
        "1",
        &p,
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn routes_refuse_or_skip_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.txt");
    std::fs::write(&f, "10.0.0.0/8 1\n10.0.0.0/40 2\n192.168.0.0/16 0\n").unwrap();
    let p = f.to_string_lossy().into_owned();
    let o = bricks(&["routes", "stats", "--strict", &p]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("bad.txt:2"), "{}", stderr(&o));
    let o = bricks(&["routes", "stats", &p]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning: ") && stderr(&o).contains("bad.txt:2"));
    assert!(
        stdout(&o).contains("2 IPv4 and 0 IPv6 prefixes"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn route_file_in_a_configuration_and_memory_bound() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("routes.txt");
    std::fs::write(&f, "10.0.0.0/8 0\n0.0.0.0/0 10.0.0.1 1\n").unwrap();
    let config = format!(
        "InfiniteSource(LIMIT 10, STOP true) -> Strip(14) -> CheckIPHeader -> rt :: DirectIPLookup(ROUTES {}); rt[0] -> Discard; rt[1] -> c :: Counter -> Discard;",
        f.display()
    );
    let o = bricks(&["check", "-e", &config]);
    assert!(o.status.success(), "{}", stderr(&o));
    let small = config.replace("ROUTES", "MEMORY 1000, ROUTES");
    let o = bricks(&["check", "-e", &small]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("memory bound"), "{}", stderr(&o));
}

#[test]
fn a_missing_interface_is_named_before_anything_runs() {
    let o = bricks(&["run", "-e", "FromDevice(nope0) -> Discard;"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("no interface `nope0`"), "{e}");
    assert!(e.contains("ip link"), "{e}");
}

#[test]
fn device_keywords_are_checked() {
    let (code, e) = check("FromDevice(eth0, BACKEND dpdk) -> Discard;");
    assert_eq!(code, 2);
    assert!(e.contains("unknown backend `dpdk`"), "{e}");
    let (code, e) = check("FromDevice(eth0, XDP_MODE turbo) -> Discard;");
    assert_eq!(code, 2);
    assert!(e.contains("expected auto, native or generic"), "{e}");
    let (code, e) =
        check("FromDevice(eth0, BACKEND xdp) -> Queue -> ToDevice(eth0, BACKEND packet);");
    assert_eq!(code, 2);
    assert!(e.contains("one interface has one backend"), "{e}");
    // Checking needs no interface and no privilege.
    let (code, e) =
        check("FromDevice(eth9, QUEUE 3) -> Queue -> ToDevice(eth9, BURST 16, FLUSH 50us);");
    assert_eq!(code, 0, "{e}");
}

#[test]
fn ctl_without_a_router_says_what_is_missing() {
    let o = bricks(&["ctl", "/nonexistent/bricks.sock", "stats"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is a router running with --control"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn control_socket_answers_while_running() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let s = sock.to_str().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args([
            "run",
            "-e",
            "InfiniteSource(LIMIT -1) -> c :: Counter -> Discard;",
            "--threads",
            "2",
            "--stats-interval",
            "0.05",
            "--duration",
            "10",
            "--control",
            s,
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    let o = bricks(&["ctl", s, "stats"]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert!(v["total"]["c"]["count"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["workers"].as_array().unwrap().len(), 2);
    let o = bricks(&["ctl", s, "write", "c.reset"]);
    assert_eq!(stdout(&o).trim(), "ok");
    let o = bricks(&["ctl", s, "write", "nothere.reset"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("no element `nothere`"),
        "{}",
        stdout(&o)
    );
    let o = bricks(&["ctl", s, "frobnicate"]);
    assert!(stdout(&o).contains("unknown command"), "{}", stdout(&o));
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    assert!(child.wait().unwrap().success());
    assert!(!sock.exists(), "the socket file is removed at exit");
}

#[test]
fn settings_in_the_configuration_and_json_counters_per_worker() {
    let conf = "Settings(THREADS 2); InfiniteSource(LIMIT 10) -> c :: Counter -> Discard;";
    let o = bricks(&[
        "run",
        "-e",
        conf,
        "--stats-interval",
        "0.01",
        "--stats-json",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let last = stdout(&o).lines().last().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    let w = v["workers"].as_array().unwrap();
    assert_eq!(w.len(), 2, "Settings(THREADS 2) gives two workers: {v}");
    assert_eq!(w[0]["elements"]["c"]["count"], 10);
    assert_eq!(w[1]["elements"]["c"]["count"], 0, "sources run on worker 0");
    // The command line wins over the configuration.
    let o = bricks(&[
        "run",
        "-e",
        conf,
        "--threads",
        "1",
        "--stats-interval",
        "0.01",
        "--stats-json",
        "--quiet",
    ]);
    let last = stdout(&o).lines().last().unwrap().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(v["workers"].as_array().unwrap().len(), 1);
    let (code, e) = check("Settings(MODE turbo);");
    assert_eq!(code, 2);
    assert!(e.contains("expected per-core, pipeline or serial"), "{e}");
}

#[test]
fn require_package_is_a_warning_and_the_configuration_runs() {
    let (code, err) = check("require(package foo)\nInfiniteSource(LIMIT 1) -> Discard;");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("warning: package `foo` is not available"),
        "{err}"
    );
    let o = bricks(&[
        "run",
        "-e",
        "require(package foo) InfiniteSource(LIMIT 1) -> c :: Counter -> Discard;",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: package `foo`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_listing_piped_into_a_reader_that_stops_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    // A graph description far larger than a pipe's buffer.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("big.click");
    std::fs::write(
        &config,
        "InfiniteSource(LIMIT 1) -> Discard;\n".repeat(5000),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["check", config.to_str().unwrap()])
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone (`bricks check ... | head -1`).
    let out = child.wait_with_output().unwrap();
    assert!(!first.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn fastclick_dpdk_configurations_run_on_bricks_devices() {
    // FastClick's names and tuning keywords, a DPDK port number bound to
    // captures: every frame of the input capture leaves by the output one.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.pcap");
    let o = bricks(&[
        "run",
        "-e",
        "DPDKInfo(NB_MBUF 65536); TSCClock(NOWAIT true); \
         FromDPDKDevice(0, VERBOSE 99, N_QUEUES -1, RSS_AGGREGATE 1, PROMISC true, BURST 32) \
         -> EnsureDPDKBuffer -> c :: Counter -> Queue(1024) \
         -> ToDPDKDevice(0, IQUEUE 1024, BLOCKING false, BURST 32);",
        "-d",
        &format!(
            "0=pcap:tests/golden/ip-router/eth0-in.pcap,{}",
            out.display()
        ),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let count = stderr(&o)
        .lines()
        .find(|l| l.starts_with("c (Counter)"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("count=")))
        .map(|v| v.parse::<u64>().unwrap())
        .unwrap_or(0);
    assert!(count > 0, "{}", stderr(&o));
    let written = std::fs::metadata(&out).unwrap().len();
    assert!(written > 24, "an empty capture: {}", stderr(&o));
    // A keyword FastClick does not have is still refused.
    let (code, err) = check("FromDPDKDevice(eth0, NOT_A_KEYWORD 1) -> Discard;");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("NOT_A_KEYWORD"), "{err}");
}
