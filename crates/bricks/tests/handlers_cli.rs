//! `bricks run -h ELEMENT.HANDLER` and `-q`, in Click's output format.

use std::process::Command;

fn bricks(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("running bricks")
}

#[test]
fn handlers_print_with_names_and_blank_lines() {
    let o = bricks(&[
        "run",
        "-e",
        "s :: InfiniteSource(LIMIT 5, STOP true) -> c :: Counter -> Discard;",
        "--quiet",
        "-h",
        "c.count",
        "-h",
        "c.class",
        "-h",
        "c.name",
        "-h",
        "s.config",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        out,
        "c.count:\n5\n\nc.class:\nCounter\n\nc.name:\nc\n\ns.config:\nLIMIT 5, STOP true\n\n"
    );
}

#[test]
fn one_handler_prints_its_value_alone_and_quit_runs_nothing() {
    let o = bricks(&[
        "run",
        "-e",
        "InfiniteSource(LIMIT 5, STOP true) -> c :: Counter -> Discard;",
        "--quiet",
        "-q",
        "-h",
        "c.count",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "0\n");
}

#[test]
fn a_missing_element_is_an_error() {
    let o = bricks(&[
        "run",
        "-e",
        "Idle -> c :: Counter -> Discard;",
        "-q",
        "-h",
        "x.count",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no element 'x'"));
}

#[test]
fn patterns_and_classes_read_every_element_they_match_with_names() {
    let config = "c1 :: Counter; c2 :: Counter; d :: Counter; \
                  InfiniteSource(LIMIT 3) -> c1 -> c2 -> d -> Discard;";
    let o = bricks(&["run", "--quiet", "-e", config, "-h", "c*.count"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "c1.count:\n3\n\nc2.count:\n3\n\n"
    );
    let o = bricks(&["run", "--quiet", "-e", config, "-h", "Counter.count"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "c1.count:\n3\n\nc2.count:\n3\n\nd.count:\n3\n\n"
    );
    let o = bricks(&["run", "--quiet", "-q", "-e", config, "-h", "list"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "5\nc1\nc2\nd\nInfiniteSource@4\nDiscard@5\n"
    );
    let o = bricks(&[
        "run", "--quiet", "-e", config, "-h", "z*.count", "-h", "d.nope",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no element matching 'z*'"), "{err}");
    assert!(err.contains("no 'd.nope' handler"), "{err}");
}

#[test]
fn ports_and_handlers_read_as_click_prints_them() {
    let o = bricks(&[
        "run",
        "-e",
        "i :: InfiniteSource(LIMIT 3) -> c :: Counter -> q :: Queue -> d :: Discard;",
        "--quiet",
        "-h",
        "q.ports",
        "-h",
        "c.handlers",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with("q.ports:\n1 input\npush\t-\tc [0]\n1 output\npull\t-\t[0] d\n\n"),
        "{out}"
    );
    let handlers = out.split("c.handlers:\n").nth(1).unwrap_or_default();
    for line in [
        "name\tr",
        "class\tr",
        "config\tr",
        "ports\tr",
        "handlers\tr",
        "count\tr",
    ] {
        assert!(
            handlers.lines().any(|l| l == line),
            "{line:?} in {handlers}"
        );
    }
}

#[test]
fn simtime_starts_the_clock_where_asked_and_jumps_to_each_timer() {
    let config = "TimedSource(1, LIMIT 3) -> SetTimestamp -> Print(TIMESTAMP true) -> Discard;";
    let o = bricks(&["run", "--quiet", "--simtime", "5", "-e", config]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let secs: Vec<&str> = err.lines().filter_map(|l| l.split('.').next()).collect();
    // One a second from the start.
    assert_eq!(secs, ["6", "7", "8"], "{err}");
    // Click's default start.
    let o = bricks(&["run", "--quiet", "--simtime", "-e", config]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("1000000001."), "{err}");
}

#[test]
fn the_exit_handler_gives_the_exit_status() {
    let config = "InfiniteSource(LIMIT 7) -> c :: Counter -> Discard;";
    let o = bricks(&[
        "run", "--quiet", "-e", config, "-x", "c.count", "-h", "c.count",
    ]);
    assert_eq!(o.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "7\n");
    let o = bricks(&["run", "--quiet", "-e", config, "-x", "c.class"]);
    assert_eq!(o.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&o.stderr).contains("should be integer"));
}

#[test]
fn variables_follow_the_file_and_the_configuration_may_come_on_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let config = "InfiniteSource(LIMIT $N) -> c :: Counter -> Discard;";
    let o = bricks(&["run", "--quiet", "-e", config, "N=3", "-h", "c.count"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "3\n");
    for args in [
        &["run", "--quiet", "-h", "c.count", "N=4"][..],
        &["run", "-", "N=4", "--quiet", "-h", "c.count"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bricks"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(config.as_bytes())
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "4\n",
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = bricks(&["run", "-e", config, "N=1", "junk"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("`junk`"));
}
