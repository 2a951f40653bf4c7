//! Runs of the `bricks` binary that cannot hang a test: every run has a
//! deadline past which it is killed and the test fails, with its stderr.

#![allow(dead_code)] // not every test binary uses all of it

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The longest any run may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// `bricks ARGS` with stdin closed and stdout and stderr piped.
pub fn bricks(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bricks"));
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits for `child` to end, killing it (and failing) past DEADLINE.
pub fn wait_bounded(mut child: Child, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {DEADLINE:?}\nstderr:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `bricks run --quiet -e config` plus `extra`, bounded in time.
pub fn run(config: &str, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--quiet", "-e", config];
    args.extend_from_slice(extra);
    wait_bounded(bricks(&args).spawn().expect("bricks runs"), config)
}

/// Bytes a run printed, as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `bricks ARGS` to its end, bounded in time.
pub fn output(args: &[&str]) -> Output {
    let what = args.join(" ");
    wait_bounded(bricks(args).spawn().expect("bricks runs"), &what)
}

/// Runs `config` quietly to its end, reading the handlers `reads` at exit
/// (`-h`); fails unless it succeeded, and returns its stdout and stderr.
pub fn run_reading(config: &str, reads: &[&str]) -> (String, String) {
    let mut args = vec!["run", "--quiet", "-e", config];
    for r in reads {
        args.extend_from_slice(&["-h", r]);
    }
    let o = output(&args);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{config}:\n{err}");
    (out, err)
}
