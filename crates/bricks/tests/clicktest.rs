//! `bricks clicktest`: the project's own cases in Click's `.clicktest`
//! format (tests/clicktest) all pass, and the runner fails a case whose
//! output differs.

use std::path::Path;
use std::process::Command;

fn clicktest(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .arg("clicktest")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running bricks clicktest")
}

#[test]
fn every_case_in_tests_clicktest_passes() {
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clicktest");
    let cases = cases.canonicalize().expect("tests/clicktest");
    let work = tempfile::tempdir().expect("tempdir");
    let o = clicktest(&["-j", "2", cases.to_str().expect("path")], work.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let summary = out.lines().last().unwrap_or_default();
    assert!(summary.ends_with(" failed, 0 skipped"), "{summary}");
    assert!(summary.contains(" passed, 0 failed"), "{summary}");
    let passed: usize = summary
        .trim_start_matches("clicktest: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("count");
    assert!(passed >= 30, "{summary}");
}

#[test]
fn a_case_whose_output_differs_fails_and_says_where() {
    let d = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        d.path().join("wrong.clicktest"),
        "%script\nclick -e 'InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard' -h c.count\n\
         %expect stdout\n4\n",
    )
    .expect("write");
    std::fs::write(
        d.path().join("right.clicktest"),
        "%script\nclick -e 'InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard' -h c.count\n\
         %expect stdout\n{{[0-9]}}\n",
    )
    .expect("write");
    std::fs::write(
        d.path().join("skipped.clicktest"),
        "%require\nclick-buildtool provides linuxmodule\n%script\nfalse\n",
    )
    .expect("write");
    let o = clicktest(&["."], d.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("PASS ./right.clicktest"), "{out}");
    assert!(out.contains("FAIL ./wrong.clicktest"), "{out}");
    assert!(out.contains("stdout:1: expected '4'"), "{out}");
    assert!(out.contains("stdout:1: but got  '3'"), "{out}");
    assert!(out.contains("SKIP ./skipped.clicktest"), "{out}");
    assert!(
        out.ends_with("clicktest: 1 passed, 1 failed, 1 skipped\n"),
        "{out}"
    );
}

#[test]
fn bricks_answers_to_the_name_click() {
    let d = tempfile::tempdir().expect("tempdir");
    let link = d.path().join("click");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bricks"), &link).expect("symlink");
    let o = Command::new(&link)
        .args(["-qh", "c.count", "-e", "Idle -> c :: Counter -> Discard"])
        .output()
        .expect("running click");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "0\n");
    let o = Command::new(&link)
        .arg("--frobnicate")
        .output()
        .expect("running click");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unrecognized option '--frobnicate'"));
}

#[test]
fn bricks_answers_to_the_names_click_xform_and_click_align() {
    let d = tempfile::tempdir().expect("tempdir");
    let pat = d.path().join("pat.click");
    std::fs::write(
        &pat,
        "elementclass P { input -> Paint($a) -> Paint($b) -> output }\n\
         elementclass P_Replacement { input -> Paint($b) -> output }\n",
    )
    .expect("pattern file");
    let xform = d.path().join("click-xform");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bricks"), &xform).expect("symlink");
    let o = Command::new(&xform)
        .arg("-p")
        .arg(&pat)
        .args([
            "-e",
            "i :: Idle -> Paint(1) -> p :: Paint(2) -> d :: Discard",
        ])
        .output()
        .expect("running click-xform");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The replacement's `Paint@1` has the name of the pattern's first
    // Paint, so it takes the name of what that matched, `Paint@2`.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "i :: Idle;\nd :: Discard;\nPaint@2 :: Paint(2);\ni -> Paint@2\n    -> d;\n"
    );
    let align = d.path().join("click-align");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bricks"), &align).expect("symlink");
    let o = Command::new(&align)
        .args([
            "-e",
            "InfiniteSource -> c :: Classifier(12/0800) -> Strip(14) -> CheckIPHeader -> Discard",
        ])
        .output()
        .expect("running click-align");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(":: Align(4, 2);\n"), "{out}");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "warning: added 1 Align element\n"
    );
    // The subcommands take the same command lines.
    for (cmd, usage) in [
        (
            "click-xform",
            "Usage: click-xform [OPTION]... [ROUTERFILE] [PATTERNFILE]...",
        ),
        ("click-align", "Usage: click-align [OPTION]... [ROUTERFILE]"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_bricks"))
            .args([cmd, "--help"])
            .output()
            .expect("running bricks");
        assert!(o.status.success());
        assert!(String::from_utf8_lossy(&o.stdout).contains(usage), "{cmd}");
    }
}
