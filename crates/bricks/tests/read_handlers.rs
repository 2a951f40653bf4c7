//! Element read handlers in Click's formats, read at exit with `bricks run
//! -h ELEMENT.HANDLER`.

use std::process::Command;

fn handlers(config: &str, names: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bricks"));
    cmd.args(["run", "-e", config, "--quiet"]);
    for n in names {
        cmd.args(["-h", n]);
    }
    let o = cmd.output().expect("running bricks");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn paint_color() {
    let out = handlers(
        "InfiniteSource(LIMIT 2, STOP true) -> p :: Paint(9) -> Discard;",
        &["p.color"],
    );
    assert_eq!(out, "9\n");
    let out = handlers(
        "InfiniteSource(LIMIT 2, STOP true) -> p :: Paint(9) -> q :: Paint(200) -> Discard;",
        &["p.color", "q.color"],
    );
    assert_eq!(out, "p.color:\n9\n\nq.color:\n200\n\n");
}

#[test]
fn switch_and_unqueue() {
    let out = handlers(
        "InfiniteSource(LIMIT 2, STOP true) -> sw :: Switch(5) -> Queue -> u :: Unqueue(BURST 4) -> Discard; sw[1] -> Discard;",
        &["sw.switch", "u.burst", "u.active"],
    );
    assert_eq!(out, "sw.switch:\n-1\n\nu.burst:\n4\n\nu.active:\ntrue\n\n");
}
