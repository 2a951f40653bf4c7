//! Reading `.clicktest` files: sections, file data, expectations and
//! ignore patterns, as Click's `clicktest` script reads them.

use crate::shell::{shell_split, Command};
use base64::Engine as _;
use std::collections::VecDeque;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// How an expectation is compared with the output (Click's `%expectv`,
/// `%expect` and `%expectx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Byte for byte (`%expectv`, and `%expect -e`).
    Verbatim,
    /// Literal text with Perl regular expressions inside `{{ }}`.
    Braces,
    /// Every line a regular expression.
    Regex,
}

/// One expected content of an output file (one alternate).
#[derive(Clone, Debug)]
pub struct Expect {
    pub mode: Mode,
    pub data: Vec<u8>,
    /// `FILE:LINE` of the section's first data line.
    pub firstline: String,
    /// `-w`: differences in the amount of whitespace do not count.
    pub whitespace: bool,
}

/// One `%ignore` section: each line is a regular expression that must
/// match a whole output line.
#[derive(Clone, Debug)]
pub struct Ignore {
    pub patterns: Vec<String>,
    pub whitespace: bool,
}

/// One test: a file holds several, separated by `%eot`.
#[derive(Clone, Debug, Default)]
pub struct ClickTest {
    /// The file name, with `<2>`, `<3>` ... for the tests after `%eot`.
    pub name: String,
    pub info: String,
    pub script: Vec<Command>,
    pub require: Vec<Command>,
    /// Requirement lines from `%require -q`: their failure is not reported.
    pub require_quiet: BTreeSet<String>,
    /// `%file` contents in order of definition (`stdin` among them).
    pub files: Vec<(String, Vec<u8>)>,
    /// Expected files in the order Click checks them, each with its
    /// alternates.
    pub expects: Vec<(String, Vec<Expect>)>,
    /// Ignore patterns by file name (`all` for every file).
    pub ignores: HashMap<String, Vec<Ignore>>,
    /// Problems in the file itself (`FILE:LINE: message`), reported as
    /// warnings: as in Click, they do not fail the test.
    pub errors: Vec<String>,
}

impl ClickTest {
    pub fn has_file(&self, name: &str) -> bool {
        self.files.iter().any(|(n, _)| n == name)
    }

    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.as_slice())
    }

    pub fn expects_file(&self, name: &str) -> bool {
        self.expects.iter().any(|(n, _)| n == name)
    }
}

enum Item {
    Line(Vec<u8>),
    /// Where the following lines come from (start of a file or return
    /// from an `%include`).
    Pos(String, usize),
}

/// The lines of a file, consumed section by section.
struct Reader {
    items: VecDeque<Item>,
    file: String,
    line: usize,
}

/// Most `%include` levels followed (a file including itself stops here).
const MAX_INCLUDES: usize = 16;

impl Reader {
    fn get(&mut self, across_files: bool) -> Option<Vec<u8>> {
        while let Some(item) = self.items.pop_front() {
            match item {
                Item::Line(t) => {
                    self.line += 1;
                    return Some(t);
                }
                Item::Pos(f, l) if across_files => {
                    self.file = f;
                    self.line = l;
                }
                pos => {
                    self.items.push_front(pos);
                    return None;
                }
            }
        }
        None
    }

    fn unget(&mut self, t: Option<Vec<u8>>) {
        if let Some(t) = t {
            if !t.is_empty() {
                self.items.push_front(Item::Line(t));
                self.line -= 1;
            }
        }
    }

    /// Lines up to the next section (`\%` at the start of a line is `%`).
    fn read_text(&mut self) -> Vec<u8> {
        let mut r = Vec::new();
        loop {
            let t = self.get(false);
            match t {
                Some(t) if !t.starts_with(b"%") => {
                    if t.starts_with(b"\\%") {
                        r.extend_from_slice(&t[1..]);
                    } else {
                        r.extend_from_slice(&t);
                    }
                }
                other => {
                    self.unget(other);
                    return r;
                }
            }
        }
    }

    fn skip_section(&mut self) {
        let _ = self.read_text();
    }
}

fn split_lines(data: &[u8]) -> VecDeque<Item> {
    let mut items = VecDeque::new();
    let mut start = 0;
    for (i, &b) in data.iter().enumerate() {
        if b == b'\n' {
            items.push_back(Item::Line(data[start..=i].to_vec()));
            start = i + 1;
        }
    }
    if start < data.len() {
        items.push_back(Item::Line(data[start..].to_vec()));
    }
    items
}

/// Reads every test of a `.clicktest` file.
pub fn parse_file(path: &Path) -> std::io::Result<Vec<ClickTest>> {
    let data = std::fs::read(path)?;
    Ok(parse(&path.display().to_string(), &data))
}

/// Reads every test in `data`, the contents of file `name`.
pub fn parse(name: &str, data: &[u8]) -> Vec<ClickTest> {
    let mut items = split_lines(data);
    items.push_front(Item::Pos(name.to_string(), 0));
    let mut r = Reader {
        items,
        file: name.to_string(),
        line: 0,
    };
    let mut tests = Vec::new();
    let mut includes = 0;
    loop {
        let (mut t, more) = parse_one(&mut r, &mut includes);
        t.name = if tests.is_empty() {
            name.to_string()
        } else {
            format!("{name}<{}>", tests.len() + 1)
        };
        tests.push(t);
        if !more {
            return tests;
        }
    }
}

/// `/^%\s*(\w+)\s*(.*?)\s*$/`
fn section_header(t: &[u8]) -> Option<(String, String)> {
    let s = String::from_utf8_lossy(t);
    let rest = s.strip_prefix('%')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    if end == 0 {
        return None;
    }
    Some((
        rest[..end].to_ascii_lowercase(),
        rest[end..].trim().to_string(),
    ))
}

fn parse_one(r: &mut Reader, includes: &mut usize) -> (ClickTest, bool) {
    let mut tt = ClickTest::default();
    let mut read_command = false;
    let mut expect_names: [Vec<String>; 3] = Default::default();
    let mut keyed: Vec<((String, char), Vec<Expect>)> = Vec::new();
    let mut more = false;
    while let Some(t) = r.get(true) {
        if let Some((command, args)) = section_header(&t) {
            match command.as_str() {
                "script" | "test" => read_script(r, &mut tt, &args, false),
                "require" => read_script(r, &mut tt, &args, true),
                "info" | "desc" => {
                    if !args.is_empty() {
                        file_err(
                            &mut tt,
                            r,
                            r.line,
                            &format!("arguments to '%{command}' ignored"),
                        );
                    }
                    tt.info.push_str(&String::from_utf8_lossy(&r.read_text()));
                }
                "cut" => {
                    r.skip_section();
                }
                "stdin" | "input" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::File,
                    Some("stdin"),
                    &mut expect_names,
                    &mut keyed,
                ),
                "file" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::File,
                    None,
                    &mut expect_names,
                    &mut keyed,
                ),
                "stdout" | "output" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::Expect,
                    Some("stdout"),
                    &mut expect_names,
                    &mut keyed,
                ),
                "stderr" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::Expect,
                    Some("stderr"),
                    &mut expect_names,
                    &mut keyed,
                ),
                "expect" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::Expect,
                    None,
                    &mut expect_names,
                    &mut keyed,
                ),
                "expectx" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::ExpectX,
                    None,
                    &mut expect_names,
                    &mut keyed,
                ),
                "expectv" | "expect_verbatim" | "verbatim" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::ExpectV,
                    None,
                    &mut expect_names,
                    &mut keyed,
                ),
                "ignore" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::Ignore,
                    None,
                    &mut expect_names,
                    &mut keyed,
                ),
                "ignorev" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::IgnoreV,
                    None,
                    &mut expect_names,
                    &mut keyed,
                ),
                "ignorex" => read_file_section(
                    r,
                    &mut tt,
                    &args,
                    Kind::IgnoreX,
                    None,
                    &mut expect_names,
                    &mut keyed,
                ),
                "include" => include(r, &mut tt, &args, includes),
                "eot" => {
                    r.items.push_front(Item::Pos(r.file.clone(), r.line));
                    more = true;
                    break;
                }
                "eof" => while r.get(false).is_some() {},
                _ => {
                    file_err(
                        &mut tt,
                        r,
                        r.line,
                        &format!("unrecognized command '{command}'"),
                    );
                    r.skip_section();
                }
            }
            read_command = true;
        } else if t.starts_with(b"%") {
            file_err(&mut tt, r, r.line, "bad '%' command");
        } else if !t.starts_with(b"#")
            && !t.starts_with(b"!")
            && t.iter().any(|b| !b.is_ascii_whitespace())
        {
            if read_command {
                file_err(&mut tt, r, r.line, "warning: garbage ignored");
            }
            read_command = false;
        }
    }
    // Click checks %expect names first, then %expectx, then %expectv; each
    // name once, trying its `%expectv`, `%expect` and `%expectx`
    // alternates in that order.
    let mut done = BTreeSet::new();
    for n in expect_names.iter().flatten() {
        if !done.insert(n.clone()) {
            continue;
        }
        let mut all = Vec::new();
        for p in ['v', 'e', 'x'] {
            if let Some((_, v)) = keyed.iter().find(|(k, _)| k.0 == *n && k.1 == p) {
                all.extend(v.iter().cloned());
            }
        }
        tt.expects.push((n.clone(), all));
    }
    (tt, more)
}

fn file_err(tt: &mut ClickTest, r: &Reader, line: usize, msg: &str) {
    tt.errors.push(format!("{}:{}: {}", r.file, line, msg));
}

fn include(r: &mut Reader, tt: &mut ClickTest, args: &str, includes: &mut usize) {
    let path = if args.starts_with('/') {
        args.to_string()
    } else {
        match r.file.rfind('/') {
            Some(i) => format!("{}{}", &r.file[..=i], args),
            None => args.to_string(),
        }
    };
    *includes += 1;
    if *includes > MAX_INCLUDES {
        file_err(
            tt,
            r,
            r.line,
            &format!("%include {path}: too many levels of %include"),
        );
        return;
    }
    match std::fs::read(&path) {
        Ok(data) => {
            let mut items = split_lines(&data);
            items.push_front(Item::Pos(path, 0));
            items.push_back(Item::Pos(r.file.clone(), r.line));
            while let Some(i) = items.pop_back() {
                r.items.push_front(i);
            }
        }
        Err(e) => file_err(tt, r, r.line, &format!("%include {path}: {e}")),
    }
}

fn read_script(r: &mut Reader, tt: &mut ClickTest, args: &str, require: bool) {
    let quiet = require && args == "-q";
    if !args.is_empty() && !quiet {
        let what = if require { "require" } else { "script" };
        file_err(tt, r, r.line, &format!("arguments to '%{what}' ignored"));
    }
    let first_line = r.line + 1;
    let text = r.read_text();
    let file = r.file.clone();
    let target = if require {
        &mut tt.require
    } else {
        &mut tt.script
    };
    let count = target.len();
    let problem = shell_split(target, &file, &text, first_line);
    let new_lines: Vec<String> = target[count..].iter().map(|c| c.lineno.clone()).collect();
    if let Some(p) = problem {
        let what = if require { "require" } else { "script" };
        file_err(tt, r, r.line, &format!("{p} in '%{what}'"));
    }
    if quiet {
        tt.require_quiet.extend(new_lines);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Expect,
    ExpectV,
    ExpectX,
    Ignore,
    IgnoreV,
    IgnoreX,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Expect => "expect",
            Kind::ExpectV => "expectv",
            Kind::ExpectX => "expectx",
            Kind::Ignore => "ignore",
            Kind::IgnoreV => "ignorev",
            Kind::IgnoreX => "ignorex",
        }
    }

    fn is_ignore(self) -> bool {
        matches!(self, Kind::Ignore | Kind::IgnoreV | Kind::IgnoreX)
    }
}

/// Whether `name` is a file name a test may use: relative, without `..`.
fn good_filename(name: &str) -> bool {
    let simple = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !name.is_empty() && name.chars().all(simple) {
        return true;
    }
    !name.is_empty()
        && name.chars().all(|c| simple(c) || c == '/')
        && !name.starts_with("../")
        && !name.contains("/../")
        && !name.ends_with("/..")
        && !name.starts_with('/')
        && !name.contains("//")
        && !name.ends_with('/')
}

#[allow(clippy::too_many_arguments)]
fn read_file_section(
    r: &mut Reader,
    tt: &mut ClickTest,
    args: &str,
    kind: Kind,
    backup: Option<&str>,
    expect_names: &mut [Vec<String>; 3],
    keyed: &mut Vec<((String, char), Vec<Expect>)>,
) {
    let secname = kind.name();
    let mut args: VecDeque<String> = args.split_whitespace().map(str::to_string).collect();
    let (mut alternate, mut delfirst, mut whitespace, mut base64, mut case_insensitive) =
        (false, false, false, false, false);
    let mut length: Option<usize> = None;
    // Flags may be bundled (`-ai`), as Click's script reads them.
    while let Some(a) = args.front().cloned() {
        if let Some(rest) = a.strip_prefix('-') {
            let Some(flag) = rest.chars().next() else {
                break;
            };
            match flag {
                'a' => alternate = true,
                'd' => delfirst = true,
                'i' => case_insensitive = true,
                'e' => base64 = true,
                'w' => whitespace = true,
                _ => break,
            }
            let remaining = &rest[flag.len_utf8()..];
            if remaining.is_empty() {
                args.pop_front();
            } else {
                args[0] = format!("-{remaining}");
            }
        } else if let Some(n) = a.strip_prefix('+').and_then(|n| n.parse().ok()) {
            length = Some(n);
            args.pop_front();
        } else {
            break;
        }
    }
    let seclineno = r.line;
    if args.is_empty() {
        match (backup, kind) {
            (Some(b), _) => args.push_back(b.to_string()),
            (None, Kind::File) => args.push_back("stdin".into()),
            (None, Kind::Expect | Kind::ExpectV | Kind::ExpectX) => args.push_back("stdout".into()),
            (None, _) => args.push_back("all".into()),
        }
    }
    if (kind == Kind::File || kind.is_ignore()) && alternate {
        file_err(tt, r, seclineno, &format!("'%{secname} -a' is illegal"));
    }
    if matches!(kind, Kind::File | Kind::ExpectV) && case_insensitive {
        file_err(tt, r, seclineno, &format!("'%{secname} -i' is illegal"));
    }
    if matches!(kind, Kind::File | Kind::ExpectV) && whitespace {
        file_err(tt, r, seclineno, &format!("'%{secname} -w' is illegal"));
    }
    if (kind == Kind::ExpectX || kind.is_ignore()) && base64 {
        file_err(tt, r, seclineno, &format!("'%{secname} -e' is illegal"));
    }

    let firstline = format!("{}:{}", r.file, seclineno + 1);
    let mut data = Vec::new();
    if let Some(length) = length {
        while data.len() < length {
            let Some(t) = r.get(false) else { break };
            data.extend_from_slice(&t);
            if data.len() > length {
                // The rest of this line belongs to what follows.
                let extra = data.split_off(length);
                r.unget(Some(extra));
                r.line += 1;
            }
        }
        if data.len() != length {
            file_err(tt, r, seclineno, "file too short");
        }
    } else {
        data = r.read_text();
    }

    if delfirst {
        data = data
            .split_inclusive(|&b| b == b'\n')
            .flat_map(|l| {
                if l.first() == Some(&b'\n') {
                    l
                } else {
                    &l[1.min(l.len())..]
                }
            })
            .copied()
            .collect();
    }
    if base64 {
        let text: Vec<u8> = data
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect();
        data = base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap_or_else(|e| {
                file_err(tt, r, seclineno, &format!("bad Base64 data: {e}"));
                Vec::new()
            });
    }

    for fname in args {
        let bad_special = (fname == "stdin" && kind != Kind::File)
            || ((fname == "stdout" || fname == "stderr") && kind == Kind::File)
            || (fname == "all" && !kind.is_ignore());
        if bad_special {
            file_err(
                tt,
                r,
                seclineno,
                &format!("'{fname}' not meaningful for '%{secname}'"),
            );
        }
        if !good_filename(&fname) {
            file_err(
                tt,
                r,
                seclineno,
                &format!("bad filename '%{secname} {fname}'"),
            );
            continue;
        }
        match kind {
            Kind::File => {
                if tt.has_file(&fname) {
                    file_err(
                        tt,
                        r,
                        seclineno,
                        &format!("'%{secname} {fname}' already defined"),
                    );
                    continue;
                }
                tt.files.push((fname, data.clone()));
            }
            Kind::Expect | Kind::ExpectV | Kind::ExpectX => {
                // Click files alternates under a key of the section's kind
                // (`e:`, `x:`, `v:`); `%expect -e` keeps the `e:` key.
                let (prefix, mode) = match kind {
                    Kind::ExpectV => ('v', Mode::Verbatim),
                    Kind::ExpectX => ('x', Mode::Regex),
                    _ => ('e', Mode::Braces),
                };
                let mut d = data.clone();
                if case_insensitive {
                    d = add_case_insensitive(&d, mode);
                }
                let list = match (kind, base64) {
                    (Kind::Expect, false) => 0,
                    (Kind::ExpectX, _) => 1,
                    _ => 2,
                };
                let key = (fname.clone(), prefix);
                let e = Expect {
                    mode,
                    data: d,
                    firstline: firstline.clone(),
                    whitespace,
                };
                match keyed.iter_mut().find(|(k, _)| *k == key) {
                    Some(_) if !alternate => {
                        file_err(
                            tt,
                            r,
                            seclineno,
                            &format!("'%{secname} {fname}' already defined"),
                        );
                    }
                    Some((_, v)) => v.push(e),
                    None => {
                        if !expect_names[list].contains(&fname) {
                            expect_names[list].push(fname.clone());
                        }
                        keyed.push((key, vec![e]));
                    }
                }
            }
            Kind::Ignore | Kind::IgnoreV | Kind::IgnoreX => {
                let text = String::from_utf8_lossy(&data).into_owned();
                let patterns = ignore_patterns(&text, kind, whitespace, case_insensitive);
                tt.ignores.entry(fname).or_default().push(Ignore {
                    patterns,
                    whitespace,
                });
            }
        }
    }
}

/// `-i`: `{{` becomes `{{(?i)` in `%expect`, every line starts with
/// `(?i)` in `%expectx`.
fn add_case_insensitive(data: &[u8], mode: Mode) -> Vec<u8> {
    let text = String::from_utf8_lossy(data);
    let out = if mode == Mode::Braces {
        text.replace("{{", "{{(?i)")
    } else {
        text.split_inclusive('\n')
            .map(|l| {
                if l == "\n" {
                    l.to_string()
                } else {
                    format!("(?i){l}")
                }
            })
            .collect()
    };
    out.into_bytes()
}

/// The regular expression of each line of an ignore section.
fn ignore_patterns(
    text: &str,
    kind: Kind,
    whitespace: bool,
    case_insensitive: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut line = line.to_string();
        if whitespace {
            line.retain(|c| !matches!(c, ' ' | '\x0c' | '\r' | '\t' | '\x0b'));
        }
        if line.is_empty() {
            continue;
        }
        let mut p = match kind {
            Kind::Ignore => crate::compare::braces_to_regex(&line, true).0,
            Kind::IgnoreV => fancy_regex::escape(&line).into_owned(),
            _ => strip_comments(&line),
        };
        if p.trim().is_empty() {
            continue;
        }
        if case_insensitive {
            p = format!("(?i){p}");
        }
        out.push(p);
    }
    out
}

/// Removes `{{?comment}}` blocks and the whitespace around them.
pub(crate) fn strip_comments(line: &str) -> String {
    let mut s = line.to_string();
    while let Some(start) = s.find("{{?") {
        let Some(len) = s[start..].find("}}") else {
            break;
        };
        let end = start + len + 2;
        let before = s[..start].trim_end().len();
        let after = end + (s[end..].len() - s[end..].trim_start().len());
        s.replace_range(before..after, "");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_files_and_expectations() {
        let t = parse(
            "t.clicktest",
            b"%info\nA test.\n\n%script\nclick -e 'x' -h c.count\n%file A\nab\n%expect stdout\n10\n%stderr\n%ignore\nwarning{{.*}}\n",
        );
        assert_eq!(t.len(), 1);
        let t = &t[0];
        assert!(t.errors.is_empty(), "{:?}", t.errors);
        assert_eq!(t.info, "A test.\n\n");
        assert_eq!(t.script.len(), 1);
        assert_eq!(t.script[0].text, "click -e 'x' -h c.count\n");
        assert_eq!(t.script[0].lineno, "t.clicktest:5");
        assert_eq!(t.file("A"), Some(&b"ab\n"[..]));
        assert_eq!(t.expects.len(), 2);
        assert_eq!(t.expects[0].0, "stdout");
        assert_eq!(t.expects[0].1[0].data, b"10\n");
        assert_eq!(t.expects[0].1[0].firstline, "t.clicktest:9");
        assert_eq!(t.expects[1].0, "stderr");
        assert_eq!(
            t.ignores["all"][0].patterns,
            vec!["warning(?:.*)".to_string()]
        );
    }

    #[test]
    fn lengths_base64_delete_first_and_eot() {
        let t = parse(
            "f",
            b"%script\ncat A\n%file +5 A\n%abc\n%file -e B\naGk=\n%file -d C\n %x\n y\n%eot\n%script\ntrue\n%stdin\nin\n",
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].file("A"), Some(&b"%abc\n"[..]));
        assert_eq!(t[0].file("B"), Some(&b"hi"[..]));
        assert_eq!(t[0].file("C"), Some(&b"%x\ny\n"[..]));
        assert_eq!(t[1].name, "f<2>");
        assert_eq!(t[1].file("stdin"), Some(&b"in\n"[..]));
        assert!(t[0].errors.is_empty() && t[1].errors.is_empty());
    }

    #[test]
    fn alternates_and_bad_names() {
        let t = &parse(
            "f",
            b"%script\ntrue\n%expect -a stdout\n1\n%expect -a stdout\n2\n%file ../x\n",
        )[0];
        assert_eq!(t.expects.len(), 1);
        assert_eq!(t.expects[0].1.len(), 2);
        assert_eq!(t.errors, vec!["f:7: bad filename '%file ../x'".to_string()]);
    }

    #[test]
    fn comments_are_stripped() {
        assert_eq!(strip_comments("a  {{? why }}  b"), "ab");
        assert_eq!(strip_comments("a{{x}}"), "a{{x}}");
    }
}
