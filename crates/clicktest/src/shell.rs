//! Splitting a `%script` section into shell commands, as Click's
//! `clicktest` does, so that a failure can name the command and its line.

/// One command of a script: its text (with the newline) and `FILE:LINE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub text: String,
    pub lineno: String,
}

fn find(text: &[u8], c: u8, from: usize) -> usize {
    text.get(from..)
        .and_then(|t| t.iter().position(|&b| b == c))
        .map_or(text.len(), |i| from + i)
}

/// Splits `text` (whose first line is line `first_line` of `file`) into
/// commands: a command ends at a newline outside quotes, backquotes and
/// braces that no backslash continues; `#` comments join the command that
/// follows. Returns the problem when a quote is left open.
pub fn shell_split(
    out: &mut Vec<Command>,
    file: &str,
    text: &[u8],
    first_line: usize,
) -> Option<&'static str> {
    let len = text.len();
    let (mut in_single, mut in_double, mut in_back, mut braces) = (false, false, false, 0i64);
    let (mut first, mut pos) = (0usize, 0usize);
    let mut lineno = first_line;
    let push = |out: &mut Vec<Command>, from: usize, to: usize, lineno: usize| {
        out.push(Command {
            text: String::from_utf8_lossy(&text[from..to]).into_owned(),
            lineno: format!("{file}:{lineno}"),
        });
    };
    while pos < len {
        if in_single {
            let q = find(text, b'\'', pos);
            in_single = q == len;
            pos = q + 1;
            continue;
        }
        if in_double {
            let q = find(text, b'"', pos);
            in_double = q == len;
            pos = q + 1;
            continue;
        }
        let next = text[pos..]
            .iter()
            .position(|b| matches!(b, b'\'' | b'"' | b'`' | b'\n' | b'#' | b'{' | b'}'))
            .map(|i| pos + i);
        let Some(at) = next else { break };
        match text[at] {
            b'\'' => {
                in_single = true;
                pos = at + 1;
            }
            b'"' => {
                in_double = true;
                pos = at + 1;
            }
            b'`' => {
                in_back = !in_back;
                pos = at + 1;
            }
            b'{' => {
                braces += 1;
                pos = at + 1;
            }
            b'}' => {
                braces -= 1;
                pos = at + 1;
            }
            b'#' => {
                // A comment runs to the end of its line, whose newline does
                // not end the command.
                pos = find(text, b'\n', at) + 1;
            }
            _ => {
                let continued = at > pos && text[at - 1] == b'\\';
                if !in_back && braces == 0 && !continued {
                    let start_line = first_line
                        + text[..first].iter().filter(|&&b| b == b'\n').count()
                        + leading_comment_lines(&text[first..at]);
                    push(out, first, at + 1, start_line);
                    first = at + 1;
                    lineno = first_line + text[..first].iter().filter(|&&b| b == b'\n').count();
                }
                pos = at + 1;
            }
        }
    }
    if first < len {
        let start_line = lineno + leading_comment_lines(&text[first..]);
        push(out, first, len, start_line);
    }
    if in_single {
        Some("unmatched single quote")
    } else if in_double {
        Some("unmatched double quote")
    } else if in_back {
        Some("unmatched backquote")
    } else {
        None
    }
}

/// Lines of comments (and blank lines) before the command itself.
fn leading_comment_lines(cmd: &[u8]) -> usize {
    let mut n = 0;
    for line in cmd.split(|&b| b == b'\n') {
        let t = line.trim_ascii_start();
        if t.is_empty() || t.starts_with(b"#") {
            n += 1;
        } else {
            return n;
        }
    }
    0
}

/// The shell script Click's `clicktest` runs for a test: each command is
/// preceded by a `clicktest_lineno:` marker on standard error (unless the
/// previous one continues into it), and a trap reports the failing status.
pub fn script_text(commands: &[Command], rundir: &str) -> String {
    let mut t = String::from(
        "clicktest_failed () {\n    exitval=$?\n    test $exitval = 0 || (echo; echo clicktest_failure:$exitval) >&2\n    exit $exitval\n}\n\
         clicktest_subtest () {\n    echo clicktest_subtest \"$@\"\n    echo clicktest_subtest \"$@\" >&2\n}\n\
         trap clicktest_failed EXIT\n",
    );
    let mut last_unfinished = false;
    for c in commands {
        if !last_unfinished {
            t.push_str(&format!(
                "echo >&2; echo clicktest_lineno:{} >&2\n",
                c.lineno
            ));
        }
        let text = c.text.trim_end_matches('\n');
        if text.trim().is_empty() {
            continue;
        }
        let trimmed = text.trim_end();
        last_unfinished =
            trimmed.ends_with("&&") || trimmed.ends_with("||") || trimmed.ends_with('|');
        // `./x` names a file where the tests were started, as in Click.
        let indent = text.len() - text.trim_start().len();
        if text[indent..].starts_with("./") {
            t.push_str(&text[..indent]);
            t.push_str(rundir);
            t.push_str(&text[indent + 1..]);
        } else {
            t.push_str(text);
        }
        t.push('\n');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> (Vec<(String, String)>, Option<&'static str>) {
        let mut v = Vec::new();
        let p = shell_split(&mut v, "f", text.as_bytes(), 3);
        (v.into_iter().map(|c| (c.text, c.lineno)).collect(), p)
    }

    #[test]
    fn commands_end_at_unquoted_newlines() {
        let (v, p) = split("a 'x\ny'\nb \\\n c\nd() {\n e\n}\nf `g\nh`\n");
        assert_eq!(p, None);
        let texts: Vec<&str> = v.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            vec!["a 'x\ny'\n", "b \\\n c\n", "d() {\n e\n}\n", "f `g\nh`\n"]
        );
        let lines: Vec<&str> = v.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(lines, vec!["f:3", "f:5", "f:7", "f:10"]);
    }

    #[test]
    fn comments_join_the_next_command_and_quotes_must_close() {
        let (v, _) = split("# about b\nb\n");
        assert_eq!(v, vec![("# about b\nb\n".to_string(), "f:4".to_string())]);
        assert_eq!(split("echo 'x\n").1, Some("unmatched single quote"));
        assert_eq!(split("echo \"x\n").1, Some("unmatched double quote"));
    }

    #[test]
    fn script_marks_lines_and_rewrites_dot_slash() {
        let mut v = Vec::new();
        shell_split(&mut v, "f", b"a |\nb\n./c\n", 1);
        let s = script_text(&v, "/run");
        assert!(s.contains("clicktest_lineno:f:1 >&2\na |\nb\n"), "{s}");
        assert!(s.contains("clicktest_lineno:f:3 >&2\n/run/c\n"), "{s}");
    }
}
