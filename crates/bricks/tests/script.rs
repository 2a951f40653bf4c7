//! `Script` and `DriverManager` end to end: configurations run with
//! `bricks run`, their output on stdout and stderr, handlers read at exit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bricks(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("bricks runs")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `config` quietly with extra arguments; (status, stdout, stderr).
fn run(config: &str, extra: &[&str]) -> (i32, String, String) {
    run_in(config, extra, &root())
}

fn run_in(config: &str, extra: &[&str], dir: &Path) -> (i32, String, String) {
    let mut args = vec!["run", "--quiet", "-e", config];
    args.extend_from_slice(extra);
    let o = bricks(&args, dir);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Click's test/standard/Script-04.clicktest.
#[test]
fn arithmetic_and_variable_handlers_print_as_click_s() {
    let (code, out, err) = run(
        "s0 :: Script(
           print $(add 1 2 3),
           print $(sub 10 2 2),
           print $(min 10 6 20),
           print $(max -1 6 3),
           print $(mul 1 2 3),
           print $(div 75 2.5 5),
           print $(idiv 60 2 5),
           print $(htonl $(ntohl 6)),
           print $(htons $(ntohs 6)),
           write set foovar foo bar baz,
           print $(shift foovar),
           print $(shift foovar),
           print $(get foovar),
           stop)",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "6\n6\n6\n6\n6\n6\n6\n6\n6\nfoo\nbar\nbaz\n");
    assert_eq!(err, "");
}

/// Click's test/handlers/expansion-01.clicktest.
#[test]
fn handler_calls_expand_inside_expansions() {
    let (code, out, err) = run(
        "define($j sub)
         Script(print $(add 1 2),
                set i add,
                print $($i 3 4),
                print $($(s.run).name),
                print $($j 8 5),
                print $($j.run),
                stop)
         s :: Script(TYPE PASSIVE, return i2)
         sub :: Script(TYPE PASSIVE, return Hello)
         i1, i2 :: Idle",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "3\n7\ni2\n3\nHello\n");
}

/// Click's test/standard/Script-02.clicktest: `printn` to a file, a
/// passive script's `$1`, `readq` to standard error.
#[test]
fn print_to_a_file_and_read_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run_in(
        "s0 :: Script(printn >FILE $(s.run \"\\<0a 09 01>\"),
            readq length \"\\<0a 09 01>\",
            stop)
         s :: Script(TYPE PASSIVE, returnq $1)",
        &[],
        dir.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    assert_eq!(err, "s0.length:\n3\n");
    assert_eq!(std::fs::read(dir.path().join("FILE")).unwrap(), b"\n\t\x01");
}

#[test]
fn print_quoting_and_handlers() {
    let (code, out, err) = run(
        "Idle -> c :: Counter -> Discard;
         Script(print c.count, print \"c.count\", print '\"c.count\"',
                set x c.count, print $x, print $($x), printn \"a\", print \"b\",
                print \"a  b\" $(add 1 1), stop)",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "0\nc.count\n\"c.count\"\nc.count\n0\nab\na  b 2\n");
}

#[test]
fn waits_follow_the_simulated_clock() {
    let (code, out, err) = run(
        "Script(print $(now), wait 1.5, print $(now), wait 250ms, print $(now), stop)",
        &["--simtime"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "1000000000.000000000\n1000000001.500000000\n1000000001.750000000\n"
    );
}

#[test]
fn writes_reset_a_counter_and_resize_a_queue() {
    let (code, out, err) = run(
        "InfiniteSource(LIMIT 5) -> c :: Counter -> Discard;
         InfiniteSource(LIMIT 10) -> q :: Queue(20) -> Idle;
         Script(wait 0.05, print $(c.count), write c.reset, print $(c.count),
                print $(q.length), write q.capacity 5, print $(q.capacity),
                write q.nosuch 1, print $?, stop)",
        &["-h", "c.count"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "5\n0\n10\n5\n-22\n0\n");
    assert!(err.contains("q.nosuch"), "{err}");
}

#[test]
fn driver_manager_waits_for_two_stops() {
    let (code, out, err) = run(
        "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard;
         InfiniteSource(LIMIT 5000, STOP true) -> c2 :: Counter -> Discard;
         DriverManager(wait_stop, print $(c.count), wait_stop 1,
                       print $(add $(c.count) $(c2.count)), print \"done\")",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["3", "5003", "done"], "{out}");
}

#[test]
fn driver_manager_wait_stop_2_lets_two_sources_stop_first() {
    let (code, out, err) = run(
        "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard;
         InfiniteSource(LIMIT 7, STOP true) -> c2 :: Counter -> Discard;
         InfiniteSource(LIMIT 200000, STOP true) -> c3 :: Counter -> Discard;
         DriverManager(wait_stop 2, print $(add $(c.count) $(c2.count)),
                       print $(lt $(c3.count) 200000), wait_stop, print $(c3.count))",
        &["-j", "2"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "10\ntrue\n200000\n");
}

#[test]
fn driver_manager_outlives_write_stop_and_cleans_up() {
    let (code, out, err) = run(
        "InfiniteSource(LIMIT 4) -> c :: Counter -> Discard;
         Script(wait 0.05, write stop);
         DriverManager(pause, print $(c.count), write c.reset, wait 0.02, print $(c.count), stop)",
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "4\n0\n");
}

#[test]
fn a_loop_that_never_waits_is_given_up_and_the_run_ends_at_its_duration() {
    let (code, out, err) = run(
        "InfiniteSource -> Discard;
         s0 :: Script(label a, goto a);
         s1 :: Script(label b, wait 0, goto b);",
        &["--duration", "0.3"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    assert_eq!(err.matches("too many jumps, giving up").count(), 1, "{err}");
    assert!(
        err.contains("s0 :: Script: too many jumps, giving up"),
        "{err}"
    );
}

/// Click's test/standard/Script-03.clicktest, in simulated time.
#[test]
fn script_03_in_simulated_time() {
    let (code, _, err) = run(
        "s0 :: Script(label a, goto a); s1 :: Script(wait 1, stop);",
        &["--simtime"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "s0 :: Script: too many jumps, giving up\n");
}

#[test]
fn packet_scripts_alternate_outputs() {
    let (code, out, err) = run(
        "InfiniteSource(LIMIT 6) -> sx :: Script(TYPE PACKET, init i 0, set j $i,
             set i $(if $(eq $i 0) 1 0), return $j);
         sx[0] -> c0 :: Counter -> Discard; sx[1] -> c1 :: Counter -> Discard;",
        &["-h", "c0.count", "-h", "c1.count"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("c0.count:\n3\n"), "{out}");
    assert!(out.contains("c1.count:\n3\n"), "{out}");
}

#[test]
fn exported_variables_are_read_handlers() {
    let o = bricks(
        &[
            "run",
            "--quiet",
            "-e",
            "s :: Script(export n 0, label a, set n $(add $n 1), goto a $(lt $n 7))",
            "-h",
            "s.n",
        ],
        &root(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "7\n");
}

#[test]
fn bad_instructions_are_errors_with_their_place() {
    let o = bricks(&["check", "-e", "Script(print x,\n  bogus y)"], &root());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("syntax error at `bogus'"), "{err}");
    assert!(err.contains("<expr>:2:3"), "{err}");
    let o = bricks(&["check", "-e", "Script(goto nowhere)"], &root());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no such label `nowhere'"));
}
