//! Click's `.clicktest` test format, run the way Click's `clicktest`
//! script runs it.
//!
//! A test is a shell script (`%script`) with input files (`%file`,
//! `%stdin`) and expected output files (`%expect`, `%stdout`, `%stderr`,
//! `%expectv`, `%expectx`, with `%ignore` patterns); prerequisites in
//! `%require` skip the test when they fail. The script passes when every
//! command succeeds and every output matches: blank lines and trailing
//! whitespace do not count, and `{{ }}` in an expected line holds a Perl
//! regular expression. [`parse`] reads a file, [`run_test`] runs one test
//! in a directory of its own, [`find_tests`] collects files from
//! directories.

mod compare;
mod parse;
mod run;
mod shell;

pub use compare::{braces_to_regex, check_file, Mismatch};
pub use parse::{parse, parse_file, ClickTest, Expect, Ignore, Mode};
pub use run::{run_test, Options, Outcome, Report};
pub use shell::{script_text, shell_split, Command};

use std::path::{Path, PathBuf};

/// The test files named by `paths`: files as given, directories searched
/// recursively (sorted) for `*.clicktest` and `*.testie` files that do
/// not start with `.` or `#`.
pub fn find_tests(paths: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            search_dir(p, &mut out, 0)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// Deepest directory level searched (a symlink loop stops here).
const MAX_DEPTH: usize = 32;

fn search_dir(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> std::io::Result<()> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        let name = e
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if e.is_dir() {
            search_dir(&e, out, depth + 1)?;
        } else if !name.starts_with('.')
            && !name.starts_with('#')
            && (name.ends_with(".clicktest") || name.ends_with(".testie"))
        {
            out.push(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn run(text: &str) -> Outcome {
        let t = &parse("t.clicktest", text.as_bytes())[0];
        let o = Options {
            timeout: Duration::from_secs(10),
            ..Options::default()
        };
        run_test(t, &o).outcome
    }

    #[test]
    fn passing_and_failing_scripts() {
        assert_eq!(
            run("%script\ngrep -c B.\n%stdin\nBfoo\nB\n%stdout\n1\n"),
            Outcome::Pass
        );
        let Outcome::Fail(m) = run("%script\ngrep -c B.\n%stdin\nBfoo\nBar\n%stdout\n1\n") else {
            panic!("a wrong count must fail");
        };
        assert!(
            m[0].contains("standard output has unexpected value starting at line 1"),
            "{m:?}"
        );
        assert!(m[1].ends_with("expected '1'"), "{m:?}");
        assert!(m[2].ends_with("but got  '2'"), "{m:?}");
    }

    #[test]
    fn a_failing_command_names_its_line() {
        let Outcome::Fail(m) = run("%script\ntrue\necho oops >&2; false\necho never\n") else {
            panic!("a failing command must fail the test");
        };
        assert_eq!(m[0], "t.clicktest:3: failure at 'echo oops >&2; false'");
        assert_eq!(m[1], "  oops");
    }

    #[test]
    fn files_requirements_and_stderr() {
        let t = "%require\ntest -n \"$rundir\"\n%script\ncat A sub/B >OUT; echo err >&2\n%file A\na\n%file sub/B\nb\n%expect OUT\na\nb\n%expect stderr\nerr\n";
        assert_eq!(run(t), Outcome::Pass);
        let Outcome::Skip(why) = run("%require\nfalse\n%script\ntrue\n") else {
            panic!("a failing requirement skips");
        };
        assert!(why.contains("failure at 'false'"), "{why}");
        let Outcome::Fail(m) = run("%script\ntrue\n%expect OUT\nx\n") else {
            panic!("a missing output file fails");
        };
        assert!(m[0].contains("OUT"), "{m:?}");
    }

    #[test]
    fn a_script_that_hangs_is_stopped() {
        let t = &parse("t", b"%script\nsleep 30\n")[0];
        let o = Options {
            timeout: Duration::from_millis(300),
            ..Options::default()
        };
        let Outcome::Fail(m) = run_test(t, &o).outcome else {
            panic!("a timeout fails");
        };
        assert!(m[0].contains("timed out"), "{m:?}");
    }

    #[test]
    fn directories_are_searched_in_order() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(d.path().join("b")).expect("mkdir");
        for f in [
            "b/z.clicktest",
            "a.clicktest",
            ".hidden.clicktest",
            "c.txt",
            "b/y.testie",
        ] {
            std::fs::write(d.path().join(f), "%script\ntrue\n").expect("write");
        }
        let found = find_tests(&[d.path().to_path_buf()]).expect("search");
        let names: Vec<String> = found
            .iter()
            .map(|p| {
                p.strip_prefix(d.path())
                    .expect("prefix")
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(names, vec!["a.clicktest", "b/y.testie", "b/z.clicktest"]);
    }
}
