//! Comparing a test's output files with their expectations, line by line,
//! with Click's rules: blank lines and trailing whitespace do not count,
//! `{{ }}` holds a Perl regular expression, ignored lines are skipped.

use crate::parse::{strip_comments, ClickTest, Expect, Ignore, Mode};
use fancy_regex::Regex;

/// Where output first differs from the closest expectation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub file: String,
    /// 1-based line of the output.
    pub textline: usize,
    pub text: Option<String>,
    pub expected: Option<String>,
    /// `FILE:LINE` of the expected line in the test file.
    pub expectedline: Option<String>,
    pub subtest: Option<String>,
    /// The `{{?comment}}` of the expected line.
    pub message: Option<String>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefix = self.expectedline.clone().unwrap_or_default();
        let what = match self.file.as_str() {
            "stdout" => "standard output".to_string(),
            "stderr" => "standard error".to_string(),
            other => format!("file {other}"),
        };
        writeln!(
            f,
            "{prefix}: {what} has unexpected value starting at line {}",
            self.textline
        )?;
        if let Some(s) = &self.subtest {
            writeln!(f, "{prefix}: (subtest {s})")?;
        }
        let show = |l: &Option<String>| l.clone().unwrap_or_else(|| "<end of file>".into());
        writeln!(
            f,
            "{prefix}: {}:{}: expected '{}'",
            self.file,
            self.textline,
            show(&self.expected)
        )?;
        write!(
            f,
            "{prefix}: {}:{}: but got  '{}'",
            self.file,
            self.textline,
            show(&self.text)
        )?;
        if let Some(m) = &self.message {
            write!(f, "\n{prefix}: {}:{}: {m}", self.file, self.textline)?;
        }
        Ok(())
    }
}

/// Click's `braces_to_regex`: the regular expression for a line with
/// `{{ }}` blocks (`literal`: text outside them is matched literally),
/// and the `{{?comment}}` text.
pub fn braces_to_regex(line: &str, literal: bool) -> (String, Option<String>) {
    let mut re = String::new();
    let mut message: Option<String> = None;
    let mut x = line.to_string();
    while let Some(open) = x.find("{{") {
        let Some(close_rel) = x[open + 2..].find("}}") else {
            break;
        };
        let close = open + 2 + close_rel;
        let before = &x[..open];
        let middle = &x[open + 2..close];
        let after = &x[close + 2..];
        if let Some(comment) = middle.strip_prefix('?') {
            let comment = comment.trim();
            message = Some(match message {
                Some(m) => format!("{m} {comment}"),
                None => comment.to_string(),
            });
            x = format!("{}{}", before.trim_end(), after.trim_start());
        } else {
            if literal {
                re.push_str(&fancy_regex::escape(before));
            } else {
                re.push_str(before);
            }
            re.push_str("(?:");
            re.push_str(middle);
            re.push(')');
            x = after.to_string();
        }
    }
    if literal {
        re.push_str(&fancy_regex::escape(&x));
    } else {
        re.push_str(&x);
    }
    (re, message)
}

fn full_match(re: &str, text: &str) -> bool {
    match Regex::new(&format!(r"\A(?:{re})\z")) {
        Ok(r) => r.is_match(text).unwrap_or(false),
        Err(_) => false,
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\x0c' | b'\r' | b'\t' | b'\x0b')
}

/// `s/[ \f\r\t\013]+\n/\n/g`, `s/\n\n+\z/\n/`
fn normalize(data: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(data.len());
    for &b in data {
        if b == b'\n' {
            while out.last().is_some_and(|&c| is_ws(c)) {
                out.pop();
            }
        }
        out.push(b);
    }
    if out.ends_with(b"\n\n") {
        while out.ends_with(b"\n\n") {
            out.pop();
        }
    }
    out
}

/// Perl's `split(/\n/, $text)`: trailing empty fields are dropped.
fn split_lines(data: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    while v.last().is_some_and(Vec::is_empty) {
        v.pop();
    }
    v
}

/// A line of output: text, or a line an `%ignore` pattern took out.
#[derive(Clone, PartialEq)]
enum Line {
    Text(Vec<u8>),
    Ignored,
    End,
}

fn ignore_lines(lines: Vec<Vec<u8>>, ignores: &[&Ignore]) -> Vec<Line> {
    let compile = |p: &str, trailing: bool| {
        let re = if trailing {
            format!(r"\A(?:{p})[ \t]*\z")
        } else {
            format!(r"\A(?:{p})\z")
        };
        Regex::new(&re).ok()
    };
    let plain: Vec<Regex> = ignores
        .iter()
        .filter(|i| !i.whitespace)
        .flat_map(|i| i.patterns.iter())
        .filter_map(|p| compile(p, true))
        .collect();
    let spaced: Vec<Regex> = ignores
        .iter()
        .filter(|i| i.whitespace)
        .flat_map(|i| i.patterns.iter())
        .filter_map(|p| compile(p, false))
        .collect();
    lines
        .into_iter()
        .map(|l| {
            let s = String::from_utf8_lossy(&l);
            let squeezed: String = s
                .chars()
                .filter(|&c| !(c.is_ascii() && is_ws(c as u8)))
                .collect();
            let ignored = plain.iter().any(|r| r.is_match(&s).unwrap_or(false))
                || spaced
                    .iter()
                    .any(|r| r.is_match(&squeezed).unwrap_or(false));
            if ignored {
                Line::Ignored
            } else {
                Line::Text(l)
            }
        })
        .collect()
}

/// `_expect_trim_whitespace`: whitespace out, except inside `{{ }}`.
fn trim_expect_whitespace(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    loop {
        match rest.find("{{") {
            Some(i) => {
                out.extend(
                    rest[..i]
                        .chars()
                        .filter(|&c| !(c.is_ascii() && is_ws(c as u8))),
                );
                match rest[i..].find("}}") {
                    Some(j) => {
                        out.push_str(&rest[i..i + j + 2]);
                        rest = &rest[i + j + 2..];
                    }
                    None => {
                        out.push_str(&rest[i..]);
                        return out;
                    }
                }
            }
            None => {
                out.extend(rest.chars().filter(|&c| !(c.is_ascii() && is_ws(c as u8))));
                return out;
            }
        }
    }
}

/// Compares `raw` (the output file `file`) with one expectation; `None`
/// when it matches.
fn check_one(raw: &[u8], file: &str, exp: &Expect, ignores: &[&Ignore]) -> Option<Mismatch> {
    if raw == exp.data.as_slice() {
        return None;
    }
    let mode = exp.mode;
    let (text, expected) = if mode == Mode::Verbatim {
        (raw.to_vec(), exp.data.clone())
    } else {
        let mut text = normalize(raw);
        if text.first() == Some(&b'\n') {
            text.remove(0);
        }
        let expected = normalize(&exp.data);
        if text == expected {
            return None;
        }
        (text, expected)
    };
    let mut tl: Vec<Line> = if mode != Mode::Verbatim && !ignores.is_empty() {
        ignore_lines(split_lines(&text), ignores)
    } else {
        split_lines(&text).into_iter().map(Line::Text).collect()
    };
    tl.push(Line::End);
    let mut el: Vec<Option<Vec<u8>>> = split_lines(&expected).into_iter().map(Some).collect();
    el.push(None);
    let loose = mode != Mode::Verbatim;
    let (mut tp, mut ep) = (0usize, 0usize);
    let mut subtest: Option<String> = None;
    let mut message = None;
    while tp < tl.len() && ep < el.len() {
        while loose && el[ep].as_ref().is_some_and(Vec::is_empty) {
            ep += 1;
        }
        while matches!(&tl[tp], Line::Text(t) if t.is_empty() && loose) || tl[tp] == Line::Ignored {
            tp += 1;
        }
        if let Line::Text(t) = &tl[tp] {
            if t.len() > 18 && t.starts_with(b"clicktest_subtest ") {
                subtest = Some(String::from_utf8_lossy(&t[18..]).into_owned());
                tp += 1;
                continue;
            }
        }
        let same = match (&tl[tp], &el[ep]) {
            (Line::End, None) => true,
            (Line::Text(t), Some(e)) => {
                let (mut tline, mut eline) = (
                    String::from_utf8_lossy(t).into_owned(),
                    String::from_utf8_lossy(e).into_owned(),
                );
                if exp.whitespace {
                    tline.retain(|c| !(c.is_ascii() && is_ws(c as u8)));
                    eline = trim_expect_whitespace(&eline);
                }
                if mode != Mode::Verbatim && eline.contains("{{") {
                    let (re, m) = braces_to_regex(&eline, mode == Mode::Braces);
                    message = m;
                    full_match(&re, &tline)
                } else if mode == Mode::Regex {
                    full_match(&strip_comments(&eline), &tline)
                } else if mode == Mode::Verbatim {
                    t == e
                } else {
                    tline == eline
                }
            }
            _ => false,
        };
        if !same {
            break;
        }
        tp += 1;
        ep += 1;
    }
    if tp >= tl.len() || ep >= el.len() {
        return None;
    }
    let line_text = |l: &Line| match l {
        Line::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    };
    let expectedline = exp
        .firstline
        .rsplit_once(':')
        .and_then(|(f, n)| n.parse::<usize>().ok().map(|n| format!("{f}:{}", n + ep)));
    let mut expected = el[ep]
        .as_ref()
        .map(|e| String::from_utf8_lossy(e).into_owned());
    if mode != Mode::Verbatim {
        expected = expected.map(|e| strip_comments(&e));
    }
    Some(Mismatch {
        file: file.to_string(),
        textline: tp + 1,
        text: line_text(&tl[tp]),
        expected,
        expectedline,
        subtest,
        message,
    })
}

/// Checks output `raw` of file `file` against every alternate the test
/// gives for it; `None` when one matches, else where the alternate that
/// matched longest differs.
pub fn check_file(
    test: &ClickTest,
    file: &str,
    raw: &[u8],
    alternates: &[Expect],
) -> Option<Mismatch> {
    let mut ignores: Vec<&Ignore> = Vec::new();
    for key in [file, "all"] {
        if let Some(v) = test.ignores.get(key) {
            ignores.extend(v.iter());
        }
    }
    let clicktest_lines = Ignore {
        patterns: vec!["clicktest_lineno:.*".into(), "clicktest_error:.*".into()],
        whitespace: false,
    };
    if file == "stderr" {
        ignores.push(&clicktest_lines);
    }
    let mut best: Option<Mismatch> = None;
    for exp in alternates {
        match check_one(raw, file, exp, &ignores) {
            None => return None,
            Some(m) => {
                if best.as_ref().is_none_or(|b| m.textline > b.textline) {
                    best = Some(m);
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn check(test: &str, file: &str, output: &str) -> Option<Mismatch> {
        let t = &parse("t", test.as_bytes())[0];
        let (_, alts) = t
            .expects
            .iter()
            .find(|(n, _)| n == file)
            .expect("expectation");
        check_file(t, file, output.as_bytes(), alts)
    }

    #[test]
    fn braces_hold_regular_expressions() {
        assert_eq!(braces_to_regex("a.b{{\\d+}}c", true).0, "a\\.b(?:\\d+)c");
        let (re, msg) = braces_to_regex("x {{? why }} y", true);
        assert_eq!((re.as_str(), msg.as_deref()), ("xy", Some("why")));
        let t = "%script\ntrue\n%expect stdout\nfoo{{(bar)?}}\ncount {{\\d+}}\n";
        assert_eq!(check(t, "stdout", "foobar\ncount 12\n"), None);
        assert_eq!(check(t, "stdout", "foo\ncount 1\n"), None);
        let m = check(t, "stdout", "foo\ncount x\n").expect("mismatch");
        assert_eq!(m.textline, 2);
        assert_eq!(m.expected.as_deref(), Some("count {{\\d+}}"));
        assert_eq!(m.text.as_deref(), Some("count x"));
        assert_eq!(m.expectedline.as_deref(), Some("t:5"));
    }

    #[test]
    fn blank_lines_trailing_space_and_ignores_do_not_count() {
        let t = "%script\ntrue\n%expect stdout\na\n\nb\n%ignore stdout\nwarning: {{.*}}\n";
        assert_eq!(check(t, "stdout", "\na  \nwarning: x\nb\n\n\n"), None);
        assert!(check(t, "stdout", "a\nc\n").is_some());
        assert!(check(t, "stdout", "a\nb\nextra\n").is_some());
        assert!(check(t, "stdout", "a\n").is_some());
    }

    #[test]
    fn lookahead_whitespace_regex_and_verbatim_modes() {
        let t = "%script\ntrue\n%expect stdout\necho ({{(?!10,)\\d+}}, 0)\n";
        assert_eq!(check(t, "stdout", "echo (11, 0)\n"), None);
        assert!(check(t, "stdout", "echo (10, 0)\n").is_some());
        let w = "%script\ntrue\n%expect -w stdout\na b  c\n";
        assert_eq!(check(w, "stdout", "a   b c\n"), None);
        let x = "%script\ntrue\n%expectx stdout\n[0-9]+ packets\n";
        assert_eq!(check(x, "stdout", "42 packets\n"), None);
        assert!(check(x, "stdout", "x packets\n").is_some());
        let v = "%script\ntrue\n%expectv stdout\na{{.*}}\n";
        assert_eq!(check(v, "stdout", "a{{.*}}\n"), None);
        assert!(check(v, "stdout", "ab\n").is_some());
        assert!(check(v, "stdout", "a{{.*}}  \n").is_some());
    }

    #[test]
    fn alternates_and_case() {
        let t = "%script\ntrue\n%expect -a stdout\none\n%expect -a stdout\ntwo\n";
        assert_eq!(check(t, "stdout", "two\n"), None);
        assert!(check(t, "stdout", "three\n").is_some());
        let i = "%script\ntrue\n%expect -i stdout\nX{{abc}}\n";
        assert_eq!(check(i, "stdout", "XABC\n"), None);
        assert!(check(i, "stdout", "xabc\n").is_some());
    }

    #[test]
    fn clicktest_markers_are_ignored_on_stderr() {
        let t = "%script\ntrue\n%expect stderr\nhello\n";
        assert_eq!(check(t, "stderr", "\nclicktest_lineno:t:2\nhello\n"), None);
    }
}
