//! Argument text: splitting at commas, removing comments, substituting
//! `$variables`, and Click's quoting rules.
//!
//! These follow Click's `lib/confparse.cc`: an argument list is split at
//! commas outside quotes, comments and `\<...>` literals (and, here, outside
//! `()`, `[]` and `{}` too); each argument loses its comments, with a
//! comment and the space around it becoming one space; a final empty
//! argument is dropped, so `Foo(a, b,)` has two arguments. Double-quoted
//! strings know C escapes, `\xHH` and `\<hex>`; single-quoted strings are
//! literal.

use crate::scan;

/// Splits raw argument text at top-level commas. Returns byte ranges into
/// `raw`, one per argument, including surrounding space and comments.
pub(crate) fn split_top(raw: &str) -> Vec<(usize, usize)> {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if scan::comment_at(b, i) => {
                i = scan::skip_comment(b, i).unwrap_or(b.len());
            }
            b'"' | b'\'' => i = scan::skip_quote(b, i).unwrap_or(b.len()),
            b'\\' if scan::data_at(b, i) => i = scan::skip_data(b, i).unwrap_or(b.len()),
            b'(' | b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b',' if depth == 0 => {
                out.push((start, i));
                start = i + 1;
                i += 1;
            }
            _ => i = scan::next_special(b, i + 1, scan::SPLIT),
        }
    }
    out.push((start, b.len()));
    out
}

/// Splits argument text at top-level commas into trimmed arguments, as
/// Click's `cp_argvec` does (a final empty argument is dropped).
pub fn split_args(raw: &str) -> Vec<String> {
    let mut v: Vec<String> = split_top(raw)
        .into_iter()
        .map(|(a, b)| raw[a..b].trim().to_string())
        .collect();
    if v.last().is_some_and(|a| a.is_empty()) {
        v.pop();
    }
    v
}

/// The result of [`process`].
pub(crate) struct Processed {
    /// The text without comments, trimmed, variables substituted.
    pub text: String,
    /// Byte range in the raw text from the first to the last character
    /// that is neither space nor comment.
    pub content: Option<(usize, usize)>,
    /// Whether any variable was substituted.
    pub substituted: bool,
}

enum Piece {
    Space(usize, usize),
    Comment,
    Text,
}

/// Variables to substitute.
pub(crate) trait Vars {
    fn lookup(&self, name: &str) -> Option<String>;
}

/// Removes comments from one argument (or a whole argument list), trims
/// it, and substitutes `$name` and `${name}` outside single quotes and data
/// literals (not after a backslash inside double quotes). Substituted text
/// is not scanned again. With `vars` of `None`, `$` is left alone.
pub(crate) fn process(raw: &str, vars: Option<&mut dyn Vars>) -> Processed {
    plain(raw).unwrap_or_else(|| process_pieces(raw, vars))
}

/// Whether `raw` has nothing to remove or substitute (no comment, quote,
/// backslash, `$` or `#`): [`process`] of it, and of each of its pieces,
/// is the text trimmed.
pub(crate) fn is_plain(raw: &str) -> bool {
    let b = raw.as_bytes();
    let mut i = scan::next_special(b, 0, scan::PLAIN);
    while i < b.len() {
        match b[i] {
            b'/' if !scan::comment_at(b, i) => i = scan::next_special(b, i + 1, scan::PLAIN),
            _ => return false,
        }
    }
    true
}

/// The range of `raw` without the space around it, as [`process`] trims
/// a plain text; `None` when it is all space.
pub(crate) fn trimmed(raw: &str) -> Option<(usize, usize)> {
    let b = raw.as_bytes();
    let first = b.iter().position(|&c| !scan::is_space(c))?;
    let last = b
        .iter()
        .rposition(|&c| !scan::is_space(c))
        .map_or(first, |l| l + 1);
    Some((first, last))
}

/// [`process`] of an argument with nothing in it to remove or substitute
/// (no comment, quote, backslash, `$` or `#`): the text trimmed, copied
/// once. Most arguments are such, and a route table written inline is a
/// million of them, which the piecewise path would copy three times.
/// `None` when the argument needs [`process_pieces`].
fn plain(raw: &str) -> Option<Processed> {
    if !is_plain(raw) {
        return None;
    }
    // Space is ASCII, so these are character boundaries.
    Some(match trimmed(raw) {
        None => Processed {
            text: String::new(),
            content: None,
            substituted: false,
        },
        Some((first, last)) => Processed {
            text: raw[first..last].to_string(),
            content: Some((first, last)),
            substituted: false,
        },
    })
}

/// [`process`], piece by piece.
fn process_pieces(raw: &str, mut vars: Option<&mut dyn Vars>) -> Processed {
    let b = raw.as_bytes();
    let mut pieces: Vec<(Piece, String)> = Vec::new();
    let mut first = None;
    let mut last = 0;
    let mut substituted = false;
    let mut plain = None::<usize>;
    let mut i = 0;

    // Appends text that is content; merges with a preceding text piece.
    fn push_text(pieces: &mut Vec<(Piece, String)>, s: &str) {
        match pieces.last_mut() {
            Some((Piece::Text, t)) => t.push_str(s),
            _ => pieces.push((Piece::Text, s.to_string())),
        }
    }
    macro_rules! flush {
        () => {
            if let Some(p) = plain.take() {
                push_text(&mut pieces, &raw[p..i]);
            }
        };
    }
    macro_rules! content {
        ($from:expr, $to:expr) => {{
            first.get_or_insert($from);
            last = $to;
        }};
    }

    while i < b.len() {
        let c = b[i];
        if scan::is_space(c) {
            flush!();
            let s = i;
            while i < b.len() && scan::is_space(b[i]) {
                i += 1;
            }
            pieces.push((Piece::Space(s, i), String::new()));
        } else if scan::comment_at(b, i) {
            flush!();
            i = scan::skip_comment(b, i).unwrap_or(b.len());
            pieces.push((Piece::Comment, String::new()));
        } else if c == b'"' {
            flush!();
            let end = scan::skip_quote(b, i).unwrap_or(b.len());
            let mut s = String::new();
            let mut j = i;
            let mut run = i;
            while j < end {
                if b[j] == b'\\' && scan::data_at(b, j) {
                    j = scan::skip_data(b, j).unwrap_or(end).min(end);
                } else if b[j] == b'\\' {
                    j = (j + 2).min(end);
                } else if b[j] == b'$' {
                    // A reference that runs past the closing quote
                    // (`"${a"`) is no reference: its `$` is text.
                    if let Some((r, next)) = var_at(raw, j).filter(|&(_, n)| n <= end) {
                        if let Some(vars) = vars.as_deref_mut() {
                            s.push_str(&raw[run..j]);
                            substitute(vars, r, j, next, raw, &mut s, &mut substituted);
                            run = next;
                        }
                        j = next;
                    } else {
                        j += 1;
                    }
                } else {
                    j += 1;
                }
            }
            s.push_str(&raw[run..end]);
            push_text(&mut pieces, &s);
            content!(i, end);
            i = end;
        } else if c == b'\'' {
            flush!();
            let end = scan::skip_quote(b, i).unwrap_or(b.len());
            push_text(&mut pieces, &raw[i..end]);
            content!(i, end);
            i = end;
        } else if scan::data_at(b, i) {
            flush!();
            let end = scan::skip_data(b, i).unwrap_or(b.len());
            // Comments inside a data literal become single spaces.
            let mut s = String::new();
            let mut j = i;
            let mut run = i;
            while j < end {
                if scan::comment_at(b, j) {
                    s.push_str(&raw[run..j]);
                    s.push(' ');
                    j = scan::skip_comment(b, j).unwrap_or(end).min(end);
                    run = j;
                } else {
                    j += 1;
                }
            }
            s.push_str(&raw[run..end]);
            push_text(&mut pieces, &s);
            content!(i, end);
            i = end;
        } else if c == b'#' && i > 0 && matches!(b[i - 1], b'\n' | b'\r') {
            // A line directive (`# 12 "file.click"`): Click's `lex_config`
            // takes it out of the text and keeps the line break.
            flush!();
            i = scan::line_end(b, i);
            pieces.push((Piece::Comment, String::new()));
        } else if c == b'$' && vars.is_some() && var_at(raw, i).is_some() {
            flush!();
            let mut s = String::new();
            if let (Some((r, next)), Some(vars)) = (var_at(raw, i), vars.as_deref_mut()) {
                substitute(vars, r, i, next, raw, &mut s, &mut substituted);
                push_text(&mut pieces, &s);
                content!(i, next);
                i = next;
                continue;
            }
            i += 1;
        } else {
            if plain.is_none() {
                plain = Some(i);
            }
            let len = raw[i..].chars().next().map_or(1, char::len_utf8);
            content!(i, i + len);
            i += len;
        }
    }
    flush!();

    // Assemble: drop leading and trailing space and comments; a run of
    // space and comments with a comment in it becomes one space.
    let mut text = String::new();
    let mut gap: Vec<&(Piece, String)> = Vec::new();
    let mut seen_text = false;
    for piece in &pieces {
        match piece.0 {
            Piece::Text => {
                if seen_text {
                    if gap.iter().any(|p| matches!(p.0, Piece::Comment)) {
                        text.push(' ');
                    } else {
                        for p in &gap {
                            if let Piece::Space(s, e) = p.0 {
                                text.push_str(&raw[s..e]);
                            }
                        }
                    }
                }
                gap.clear();
                text.push_str(&piece.1);
                seen_text = true;
            }
            _ => gap.push(piece),
        }
    }
    Processed {
        text,
        content: first.map(|f| (f, last)),
        substituted,
    }
}

/// A variable reference at `i` (which holds `$`): `$name`, or `${...}`
/// up to the matching `}`. Returns the reference and the offset past it.
fn var_at(raw: &str, i: usize) -> Option<(VarRef<'_>, usize)> {
    let b = raw.as_bytes();
    if b.get(i + 1) == Some(&b'{') {
        let mut depth = 1usize;
        let mut j = i + 2;
        while j < b.len() {
            match b[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        if j >= b.len() {
            return None;
        }
        let r = VarRef::braced(&raw[i + 2..j]);
        (!r.name.is_empty()).then_some((r, j + 1))
    } else {
        let mut j = i + 1;
        while j < b.len() && scan::is_var(b[j]) {
            j += 1;
        }
        (j > i + 1).then(|| {
            (
                VarRef {
                    name: &raw[i + 1..j],
                    index: None,
                    default: None,
                },
                j,
            )
        })
    }
}

/// A parsed variable reference, as Click's `VariableEnvironment::expand`
/// reads `${NAME}`, `${NAME[N]}` (the Nth space-separated word of the
/// value, from 0) and `${NAME-default}` (the default, itself expanded,
/// when NAME is undefined).
struct VarRef<'a> {
    name: &'a str,
    /// The text between the brackets: a number, or variables that expand
    /// to one (`${a[$n]}`).
    index: Option<&'a str>,
    default: Option<&'a str>,
}

impl<'a> VarRef<'a> {
    fn braced(inner: &'a str) -> VarRef<'a> {
        let b = inner.as_bytes();
        let mut s = 0;
        while s < b.len() && scan::is_space(b[s]) {
            s += 1;
        }
        let name_start = s;
        while s < b.len() && scan::is_var(b[s]) {
            s += 1;
        }
        let name = &inner[name_start..s];
        while s < b.len() && scan::is_space(b[s]) {
            s += 1;
        }
        let mut index = None;
        if b.get(s) == Some(&b'[') {
            if let Some(close) = inner[s + 1..].find(']') {
                let k = s + 1 + close;
                let text = inner[s + 1..k]
                    .trim_start_matches(|c: char| c.is_ascii() && scan::is_space(c as u8));
                if !text.is_empty() {
                    index = Some(text);
                    s = k + 1;
                    while s < b.len() && scan::is_space(b[s]) {
                        s += 1;
                    }
                }
            }
        }
        let default = (b.get(s) == Some(&b'-')).then(|| &inner[s + 1..]);
        VarRef {
            name,
            index,
            default,
        }
    }
}

/// How deep defaults may refer to variables with defaults.
const MAX_DEFAULT_DEPTH: usize = 8;

fn substitute(
    vars: &mut dyn Vars,
    r: VarRef<'_>,
    start: usize,
    end: usize,
    raw: &str,
    out: &mut String,
    substituted: &mut bool,
) {
    substitute_at(vars, r, start, end, raw, out, substituted, 0)
}

#[allow(clippy::too_many_arguments)]
fn substitute_at(
    vars: &mut dyn Vars,
    r: VarRef<'_>,
    start: usize,
    end: usize,
    raw: &str,
    out: &mut String,
    substituted: &mut bool,
    depth: usize,
) {
    let value = match vars.lookup(r.name) {
        Some(value) => value,
        None => match r.default {
            Some(default) if depth < MAX_DEFAULT_DEPTH => expand_plain(vars, default, depth + 1),
            Some(default) => default.to_string(),
            None => {
                // Click leaves an unknown variable as it is, for the
                // elements that expand variables of their own (Script).
                out.push_str(&raw[start..end]);
                return;
            }
        },
    };
    // The index may itself be a variable (`${a[$n]}`): Click expands the
    // text inside the braces first. One that does not come to a number
    // (`${a[1 ]}`, `${a[$undefined]}`) is no index: the whole value.
    let index = r
        .index
        .and_then(|t| expand_plain(vars, t, depth + 1).parse::<usize>().ok());
    match index {
        Some(n) => {
            let word = value
                .split(|c: char| c.is_ascii() && scan::is_space(c as u8))
                .filter(|w| !w.is_empty())
                .nth(n)
                .unwrap_or("");
            out.push_str(word);
        }
        None => out.push_str(&value),
    }
    *substituted = true;
}

/// Substitutes the variables of a default value.
fn expand_plain(vars: &mut dyn Vars, text: &str, depth: usize) -> String {
    let mut out = String::new();
    let mut run = 0;
    let mut i = 0;
    let mut sub = false;
    while i < text.len() {
        if text.as_bytes()[i] == b'$' {
            if let Some((r, next)) = var_at(text, i) {
                out.push_str(&text[run..i]);
                substitute_at(vars, r, i, next, text, &mut out, &mut sub, depth);
                run = next;
                i = next;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[run..]);
    out
}

/// Separates an optional leading keyword from an argument.
///
/// Click's convention: a keyword is an all-uppercase identifier
/// `[A-Z_][A-Z0-9_]*`, followed by whitespace and the value, or standing
/// alone (then the value is empty). Anything else is a positional value.
/// The argument and value are trimmed.
///
/// ```
/// use bricks_config::split_keyword;
/// assert_eq!(split_keyword("INTERFACES 18.26.4.1/24"), (Some("INTERFACES"), "18.26.4.1/24"));
/// assert_eq!(split_keyword("STOP"), (Some("STOP"), ""));
/// assert_eq!(split_keyword("12/0800"), (None, "12/0800"));
/// assert_eq!(split_keyword("Limit 5"), (None, "Limit 5"));
/// ```
pub fn split_keyword(arg: &str) -> (Option<&str>, &str) {
    let arg = arg.trim_matches(|c: char| c.is_ascii() && scan::is_space(c as u8));
    let b = arg.as_bytes();
    let starts = b
        .first()
        .is_some_and(|&c| c.is_ascii_uppercase() || c == b'_');
    if !starts {
        return (None, arg);
    }
    let end = b
        .iter()
        .position(|&c| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_'))
        .unwrap_or(b.len());
    if end == b.len() {
        return (Some(arg), "");
    }
    if !scan::is_space(b[end]) {
        return (None, arg);
    }
    let value = arg[end..].trim_start_matches(|c: char| c.is_ascii() && scan::is_space(c as u8));
    (Some(&arg[..end]), value)
}

/// Removes one level of quoting, as Click's `cp_unquote` does, and
/// requires the result to be UTF-8.
///
/// Comments outside quotes are removed and the text trimmed; `"..."` is
/// replaced by its contents with backslash escapes processed (`\n`, `\t`,
/// `\\`, `\"`, `\xHH`, octal `\NNN`, `\<hex>`, ...); `'...'` by its
/// contents verbatim; a `\<hex>` literal outside quotes by its bytes.
/// Text outside quotes is kept as is, so `unquote("a b")` is `"a b"`.
///
/// ```
/// use bricks_config::unquote;
/// assert_eq!(unquote(r#""eth0 non-IP""#).unwrap(), "eth0 non-IP");
/// assert_eq!(unquote(r#""tab\there" /* note */"#).unwrap(), "tab\there");
/// assert!(unquote(r#""open"#).is_err());
/// ```
pub fn unquote(s: &str) -> Result<String, String> {
    String::from_utf8(unquote_bytes(s)?)
        .map_err(|_| "string is not valid UTF-8; it holds binary data".to_string())
}

/// Like [`unquote`], but returns bytes, so the text may hold binary data.
pub fn unquote_bytes(s: &str) -> Result<Vec<u8>, String> {
    let s = process(s, None).text;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = scan::skip_quote(b, i).ok_or("unterminated string: missing `\"`")?;
                let mut j = i + 1;
                while j < end - 1 {
                    if b[j] == b'\\' {
                        j = escape(&s, j, &mut out)?;
                    } else {
                        out.push(b[j]);
                        j += 1;
                    }
                }
                i = end;
            }
            b'\'' => {
                let end = scan::skip_quote(b, i).ok_or("unterminated string: missing `'`")?;
                out.extend_from_slice(&b[i + 1..end - 1]);
                i = end;
            }
            b'\\' if scan::data_at(b, i) => {
                let end = scan::skip_data(b, i).ok_or("unterminated data literal: missing `>`")?;
                decode_hex(&s[i + 2..end - 1], &mut out)?;
                i = end;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Decodes binary data: a `\<hex>` literal (whitespace and comments
/// allowed inside), a quoted string with escapes, or plain text, or any
/// sequence of these, as Click reads its string and data arguments.
///
/// ```
/// use bricks_config::parse_data;
/// assert_eq!(parse_data(r"\<08 00 /* IPv4 */ 45>").unwrap(), vec![8, 0, 0x45]);
/// assert_eq!(parse_data(r#""\<0800>\x45\n""#).unwrap(), vec![8, 0, 0x45, b'\n']);
/// assert!(parse_data(r"\<0g>").is_err());
/// ```
pub fn parse_data(s: &str) -> Result<Vec<u8>, String> {
    unquote_bytes(s)
}

/// Processes the backslash escape at `i` inside a double-quoted string;
/// returns the offset after it.
fn escape(s: &str, i: usize, out: &mut Vec<u8>) -> Result<usize, String> {
    let b = s.as_bytes();
    let Some(&c) = b.get(i + 1) else {
        out.push(b'\\');
        return Ok(i + 1);
    };
    let simple = match c {
        b'a' => Some(0x07),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'v' => Some(0x0b),
        _ => None,
    };
    if let Some(v) = simple {
        out.push(v);
        return Ok(i + 2);
    }
    match c {
        b'\n' => Ok(i + 2),
        b'\r' if b.get(i + 2) == Some(&b'\n') => Ok(i + 3),
        b'\r' => Ok(i + 2),
        b'0'..=b'7' => {
            let mut v: u32 = 0;
            let mut j = i + 1;
            while j < b.len() && j < i + 4 && (b'0'..=b'7').contains(&b[j]) {
                v = v * 8 + u32::from(b[j] - b'0');
                j += 1;
            }
            out.push((v & 0xff) as u8);
            Ok(j)
        }
        b'x' => {
            let mut v: u32 = 0;
            let mut j = i + 2;
            while j < b.len() && j < i + 4 && b[j].is_ascii_hexdigit() {
                v = v * 16 + hex_value(b[j]);
                j += 1;
            }
            if j == i + 2 {
                return Err("`\\x` must be followed by hex digits".to_string());
            }
            out.push(v as u8);
            Ok(j)
        }
        b'<' => {
            let end = scan::skip_data(b, i).ok_or("unterminated data literal: missing `>`")?;
            decode_hex(&s[i + 2..end - 1], out)?;
            Ok(end)
        }
        _ => {
            // `\\`, `\"`, `\'`, `\$`, `\,` and any other character stand
            // for themselves.
            let len = s[i + 1..].chars().next().map_or(1, char::len_utf8);
            out.extend_from_slice(&b[i + 1..i + 1 + len]);
            Ok(i + 1 + len)
        }
    }
}

fn hex_value(c: u8) -> u32 {
    match c {
        b'0'..=b'9' => u32::from(c - b'0'),
        b'a'..=b'f' => u32::from(c - b'a' + 10),
        _ => u32::from(c - b'A' + 10),
    }
}

/// Decodes the inside of a `\<...>` literal: hex digits in pairs, with
/// whitespace and comments ignored.
fn decode_hex(inner: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let b = inner.as_bytes();
    let mut half: Option<u32> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_hexdigit() {
            let v = hex_value(c);
            match half.take() {
                Some(h) => out.push((h * 16 + v) as u8),
                None => half = Some(v),
            }
            i += 1;
        } else if scan::is_space(c) {
            i += 1;
        } else if scan::comment_at(b, i) {
            i = scan::skip_comment(b, i).unwrap_or(b.len());
        } else {
            let ch = inner[i..].chars().next().unwrap_or('?');
            return Err(format!(
                "invalid character `{ch}` in data literal: only hex digits, spaces and comments may appear between `\\<` and `>`"
            ));
        }
    }
    if half.is_some() {
        return Err("odd number of hex digits in data literal".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn split(raw: &str) -> Vec<&str> {
        split_top(raw)
            .into_iter()
            .map(|(s, e)| &raw[s..e])
            .collect()
    }

    fn clean(raw: &str) -> String {
        process(raw, None).text
    }

    struct Map(HashMap<&'static str, &'static str>);

    impl Vars for Map {
        fn lookup(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|v| v.to_string())
        }
    }

    #[test]
    fn splits_at_top_level_commas_only() {
        assert_eq!(split("a, b,c"), vec!["a", " b", "c"]);
        assert_eq!(
            split(
                r#""x, y", 'p,q', (1, 2), [3,4], {5,6}, \<00 /* , */>, // c,
 z /* , */"#
            ),
            vec![
                r#""x, y""#,
                " 'p,q'",
                " (1, 2)",
                " [3,4]",
                " {5,6}",
                r" \<00 /* , */>",
                " // c,\n z /* , */"
            ]
        );
        assert_eq!(split(""), vec![""]);
        assert_eq!(split("a)]}, b"), vec!["a)]}", " b"]);
    }

    /// The shortcut for plain arguments gives what the piecewise path
    /// gives, and steps aside for everything that path handles.
    #[test]
    fn plain_arguments_take_the_shortcut_with_the_same_result() {
        let plain_ones = [
            "",
            " \t\n ",
            "10.0.0.0/8 1",
            "\n  1.0.0.0/16 10.0.1.1 1\n",
            "a / b",
            "x/",
            "1.2.3.4/24\r\n\t 2",
            "caf\u{e9} \u{1f600}  ",
            "a  b\n\tc",
        ];
        for raw in plain_ones {
            let fast = plain(raw).unwrap_or_else(|| panic!("{raw:?} is plain"));
            let slow = process_pieces(raw, None);
            assert_eq!(fast.text, slow.text, "{raw:?}");
            assert_eq!(fast.content, slow.content, "{raw:?}");
            assert!(!fast.substituted);
        }
        let others = [
            "10.0.0.0/8 1 // comment",
            "10.0.0.0/8 /* c */ 1",
            "\"10.0.0.0/8\" 1",
            "'a' b",
            "\\<00>",
            "$x",
            "a\n# 3 \"f\"\nb",
            "a \\ b",
        ];
        for raw in others {
            assert!(plain(raw).is_none(), "{raw:?}");
        }
    }

    #[test]
    fn comments_become_one_space_and_other_space_is_kept() {
        assert_eq!(clean("  a   b  "), "a   b");
        assert_eq!(clean("  a /* Comment */       b  "), "a b");
        assert_eq!(clean("a/*x*/b"), "a b");
        assert_eq!(clean(r#"  " /*???  */ "  "#), r#"" /*???  */ ""#);
        assert_eq!(clean("12/0806 20/0001 // ARP\n"), "12/0806 20/0001");
        assert_eq!(clean("/* only */"), "");
        assert_eq!(clean("\\<00 /* x */ 11 // y\n 22>"), "\\<00   11  \n 22>");
    }

    #[test]
    fn line_directives_are_taken_out() {
        assert_eq!(clean("\n# 100 \"foobar.click\"\n\"test\""), "\"test\"");
        assert_eq!(clean("a\r\n#line 3\r\nb"), "a b");
        // Only at the start of a line, and not inside strings.
        assert_eq!(clean("a # 1"), "a # 1");
        assert_eq!(clean("\"x\n# 1\""), "\"x\n# 1\"");
    }

    #[test]
    fn content_range_skips_space_and_comments() {
        let p = process(" /* c */ ab cd // e", None);
        assert_eq!(p.content, Some((9, 14)));
        assert_eq!(process(" ", None).content, None);
    }

    #[test]
    fn substitutes_variables() {
        let mut vars = Map(HashMap::from([("a", "1.2.3.4"), ("b_2", "x y")]));
        let p = process(
            r#"$a ${b_2}, "$a \$a", '$a', \<00>, $ ,$zz"#,
            Some(&mut vars),
        );
        assert_eq!(p.text, r#"1.2.3.4 x y, "1.2.3.4 \$a", '$a', \<00>, $ ,$zz"#);
        assert!(p.substituted);
        assert!(!process("$a", None).substituted);
    }

    #[test]
    fn undefined_variables_stay_as_written() {
        let mut vars = Map(HashMap::new());
        let p = process("$x ${y} ${z", Some(&mut vars));
        assert_eq!(p.text, "$x ${y} ${z");
        assert!(!p.substituted);
    }

    /// A `${` inside quotes whose brace closes past the closing quote is
    /// text, as is the rest of the quote.
    #[test]
    fn a_reference_past_the_closing_quote_is_text() {
        let mut vars = Map(HashMap::from([("a", "1")]));
        let p = process(r#"x "${a" y}" z"#, Some(&mut vars));
        assert_eq!(p.text, r#"x "${a" y}" z"#);
        let p = process(
            r#"label a" (\} {., return $.é${a"3., write s{$}"#,
            Some(&mut vars),
        );
        assert!(p.text.starts_with("label a"));
    }

    #[test]
    fn defaults_and_word_indexes() {
        let mut vars = Map(HashMap::from([("a", "eth0 eth1  eth2"), ("d", "9")]));
        let expand = |vars: &mut Map, s: &str| process(s, Some(vars)).text;
        assert_eq!(
            expand(&mut vars, "${a[0]} ${a[2]} <${a[3]}>"),
            "eth0 eth2 <>"
        );
        assert_eq!(expand(&mut vars, "${ a [1] }"), "eth1");
        assert_eq!(expand(&mut vars, "${a[1 ]}"), "eth0 eth1  eth2");
        assert_eq!(expand(&mut vars, "${nope-10} ${d-10}"), "10 9");
        assert_eq!(expand(&mut vars, "${nope-$d} ${nope-${d}x}"), "9 9x");
        assert_eq!(expand(&mut vars, "${nope[1]-a b}"), "b");
        assert_eq!(expand(&mut vars, "${nope-}"), "");
    }

    #[test]
    fn keywords() {
        assert_eq!(
            split_keyword("  LIMIT   600000 "),
            (Some("LIMIT"), "600000")
        );
        assert_eq!(split_keyword("DATA \\<00>"), (Some("DATA"), "\\<00>"));
        assert_eq!(split_keyword("_X1\tv"), (Some("_X1"), "v"));
        assert_eq!(split_keyword("STOP"), (Some("STOP"), ""));
        assert_eq!(split_keyword("-"), (None, "-"));
        assert_eq!(
            split_keyword("1.0.0.1 1.0.0.0/8"),
            (None, "1.0.0.1 1.0.0.0/8")
        );
        assert_eq!(split_keyword("ETHER:1"), (None, "ETHER:1"));
        assert_eq!(split_keyword("Stop true"), (None, "Stop true"));
        assert_eq!(split_keyword(""), (None, ""));
    }

    #[test]
    fn unquotes_strings() {
        assert_eq!(unquote(r#""a\n\t\\\"\'\$\,b""#).unwrap(), "a\n\t\\\"'$,b");
        assert_eq!(unquote(r#"'a\n' "b""#).unwrap(), r"a\n b");
        assert_eq!(unquote(r#""\x41\x4a\x4B\101\0""#).unwrap(), "AJKA\0");
        assert_eq!(unquote("plain text /* c */").unwrap(), "plain text");
        assert_eq!(unquote("\"line\\\ncontinued\"").unwrap(), "linecontinued");
        assert_eq!(unquote(r#""é""#).unwrap(), "é");
        assert!(unquote(r#""\xff""#).is_err());
        assert!(unquote(r#""\x""#).is_err());
        assert!(unquote("'open").is_err());
    }

    #[test]
    fn decodes_data() {
        assert_eq!(parse_data(r"\<00 11 22>").unwrap(), vec![0, 0x11, 0x22]);
        assert_eq!(
            parse_data("\\<00 // a comment with > in it\n 0a /* and */ FF>").unwrap(),
            vec![0, 0x0a, 0xff]
        );
        assert_eq!(parse_data(r#""\<0800>""#).unwrap(), vec![8, 0]);
        assert_eq!(parse_data(r#""ab\<0a>c""#).unwrap(), b"ab\nc".to_vec());
        assert_eq!(parse_data(r"\<>").unwrap(), Vec::<u8>::new());
        assert_eq!(
            parse_data(r"\<0>").unwrap_err(),
            "odd number of hex digits in data literal"
        );
        assert!(parse_data(r"\<0x00>").is_err());
        assert!(parse_data(r"\<00").is_err());
        assert!(parse_data(r#""\<00""#).is_err());
    }
}
