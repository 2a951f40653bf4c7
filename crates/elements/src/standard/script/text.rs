//! Click's text functions as `Script` uses them (lib/confparse.cc,
//! lib/variableenv.cc, lib/args.cc): words separated by spaces with quotes
//! kept (`cp_shift_spacevec`), one layer of quoting removed
//! (`cp_unquote`) or added (`cp_quote`), comments removed
//! (`cp_uncomment`), `$variable` and `$(handler)` substitution
//! (`cp_expand`), and Click's readings of integers, reals and booleans.
//!
//! Every scan is a single pass over the text; nothing here panics on any
//! input (every index is checked, and text is only split at ASCII bytes,
//! so always at character boundaries).

/// How deep `$(...)` and `${...}` substitutions nest before the rest is
/// left as written (Click's `depth > 10`).
const MAX_EXPAND_DEPTH: u32 = 10;

/// The longest text a substitution makes or a variable holds (Click has
/// no bound; `set x $x$x` in a loop would otherwise exhaust memory).
pub const MAX_TEXT: usize = 1 << 20;

/// Cuts `s` to at most [`MAX_TEXT`] bytes, at a character boundary.
pub fn bound(s: &mut String) {
    if s.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// Where a `//` or `/* */` comment starting at `i` ends.
fn skip_comment(s: &[u8], i: usize) -> usize {
    let end = s.len();
    if s.get(i + 1) == Some(&b'/') {
        let mut j = i + 2;
        while j + 1 < end && s[j] != b'\n' && s[j] != b'\r' {
            j += 1;
        }
        if j + 1 < end && s[j] == b'\r' && s[j + 1] == b'\n' {
            j += 1;
        }
        (j + 1).min(end)
    } else {
        let mut j = i + 2;
        while j + 2 < end && (s[j] != b'*' || s[j + 1] != b'/') {
            j += 1;
        }
        (j + 2).min(end)
    }
}

fn starts_comment(s: &[u8], i: usize) -> bool {
    s.get(i) == Some(&b'/') && matches!(s.get(i + 1), Some(b'/') | Some(b'*'))
}

/// Skips spaces and comments from `i`.
fn skip_comment_space(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        if is_space(s[i]) {
            i += 1;
        } else if starts_comment(s, i) {
            i = skip_comment(s, i);
        } else {
            break;
        }
    }
    i
}

fn skip_single_quote(s: &[u8], i: usize) -> usize {
    s[i + 1..]
        .iter()
        .position(|&b| b == b'\'')
        .map_or(s.len(), |p| i + 1 + p + 1)
}

/// Skips a backslash sequence at `i` (`\<hex>` included).
fn skip_backslash(s: &[u8], i: usize) -> usize {
    let end = s.len();
    if i + 1 >= end {
        return i + 1;
    }
    if s[i + 1] == b'<' {
        let mut j = i + 2;
        while j < end {
            if s[j] == b'>' {
                return j + 1;
            } else if starts_comment(s, j) {
                j = skip_comment(s, j);
            } else {
                j += 1;
            }
        }
        j
    } else if s[i + 1] == b'\r' && i + 2 < end && s[i + 2] == b'\n' {
        i + 3
    } else {
        (i + 2).min(end)
    }
}

fn skip_double_quote(s: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i = skip_backslash(s, i),
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// Where the space-separated item starting at `i` ends.
fn skip_spacevec_item(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        match s[i] {
            b'/' if starts_comment(s, i) => return i,
            b'"' => i = skip_double_quote(s, i),
            b'\'' => i = skip_single_quote(s, i),
            b'\\' if s.get(i + 1) == Some(&b'<') => i = skip_backslash(s, i),
            b if is_space(b) => return i,
            _ => i += 1,
        }
    }
    i
}

/// Takes the first space-separated word off `text` (quotes and `\<...>`
/// keep their spaces), as Click's `cp_shift_spacevec`.
pub fn shift_word(text: &mut String) -> String {
    let s = text.as_bytes();
    let start = skip_comment_space(s, 0);
    let end = skip_spacevec_item(s, start);
    let next = skip_comment_space(s, end);
    let word = text[start..end].to_string();
    *text = text[next..].to_string();
    word
}

/// Every space-separated word of `text`.
pub fn words(text: &str) -> Vec<String> {
    let mut rest = text.to_string();
    let mut out = Vec::new();
    loop {
        let w = shift_word(&mut rest);
        if w.is_empty() && rest.is_empty() {
            return out;
        }
        out.push(w);
        if rest.is_empty() {
            return out;
        }
    }
}

/// Whether `text` is nothing but spaces and comments.
pub fn is_blank(text: &str) -> bool {
    skip_comment_space(text.as_bytes(), 0) == text.len()
}

/// `text` without comments and surrounding spaces (Click's
/// `cp_uncomment`).
pub fn uncomment(text: &str) -> String {
    let s = text.as_bytes();
    let mut i = skip_comment_space(s, 0);
    let mut out = String::new();
    let (mut left, mut right) = (i, i);
    let mut closed = false;
    while i < s.len() {
        if is_space(s[i]) {
            i += 1;
        } else if starts_comment(s, i) {
            i = skip_comment(s, i);
            closed = true;
        } else {
            if closed {
                out.push_str(&text[left..right]);
                out.push(' ');
                left = i;
                closed = false;
            }
            i = match s[i] {
                b'\'' => skip_single_quote(s, i),
                b'"' => skip_double_quote(s, i),
                b'\\' if s.get(i + 1) == Some(&b'<') => skip_backslash(s, i),
                _ => i + 1,
            };
            right = i;
        }
    }
    out.push_str(&text[left..right.max(left)]);
    out
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Processes the backslash sequence at `i` into `out`; returns where the
/// text continues (Click's `cp_process_backslash`).
fn process_backslash(s: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let end = s.len();
    if i + 1 >= end {
        out.push(b'\\');
        return end;
    }
    match s[i + 1] {
        b'\r' => {
            if i + 2 < end && s[i + 2] == b'\n' {
                i + 3
            } else {
                i + 2
            }
        }
        b'\n' => i + 2,
        b'a' => push_ret(out, 7, i + 2),
        b'b' => push_ret(out, 8, i + 2),
        b'f' => push_ret(out, 12, i + 2),
        b'n' => push_ret(out, b'\n', i + 2),
        b'r' => push_ret(out, b'\r', i + 2),
        b't' => push_ret(out, b'\t', i + 2),
        b'v' => push_ret(out, 11, i + 2),
        b'0'..=b'7' => {
            let mut c: u32 = 0;
            let mut j = i + 1;
            let mut d = 0;
            while j < end && (b'0'..=b'7').contains(&s[j]) && d < 3 {
                c = c * 8 + u32::from(s[j] - b'0');
                j += 1;
                d += 1;
            }
            out.push(c as u8);
            j
        }
        b'x' => {
            let mut c: u32 = 0;
            let mut j = i + 2;
            while j < end {
                match hex(s[j]) {
                    Some(h) => c = (c << 4 | u32::from(h)) & 0xff,
                    None => break,
                }
                j += 1;
            }
            out.push(c as u8);
            j
        }
        b'<' => {
            let (mut c, mut d) = (0u8, 0);
            let mut j = i + 2;
            while j < end {
                if s[j] == b'>' {
                    return j + 1;
                } else if let Some(h) = hex(s[j]) {
                    c = c << 4 | h;
                    d += 1;
                    if d == 2 {
                        out.push(c);
                        c = 0;
                        d = 0;
                    }
                } else if starts_comment(s, j) {
                    j = skip_comment(s, j);
                    continue;
                }
                j += 1;
            }
            end
        }
        b => push_ret(out, b, i + 2),
    }
}

fn push_ret(out: &mut Vec<u8>, b: u8, next: usize) -> usize {
    out.push(b);
    next
}

/// Removes one layer of quoting (and comments), as Click's `cp_unquote`:
/// `"a b"` is `a b`, `'$x'` is `$x`, `"\n"` is a newline, `\<0a>` a byte.
/// Bytes that are not UTF-8 become U+FFFD.
pub fn unquote(text: &str) -> String {
    let x = uncomment(text);
    let s = x.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let mut start = 0;
    let mut quote = 0u8;
    let mut i = 0;
    let mut changed = false;
    while i < s.len() {
        match s[i] {
            q @ (b'"' | b'\'') => {
                if quote == 0 {
                    out.extend_from_slice(&s[start..i]);
                    start = i + 1;
                    quote = q;
                    changed = true;
                } else if quote == q {
                    out.extend_from_slice(&s[start..i]);
                    start = i + 1;
                    quote = 0;
                }
            }
            b'\\' if i + 1 < s.len() && (quote == b'"' || (quote == 0 && s[i + 1] == b'<')) => {
                out.extend_from_slice(&s[start..i]);
                start = process_backslash(s, i, &mut out);
                i = start;
                changed = true;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if !changed {
        return x;
    }
    out.extend_from_slice(&s[start.min(s.len())..]);
    String::from_utf8_lossy(&out).into_owned()
}

/// Quotes `text` in double quotes with Click's escapes (`cp_quote`).
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' | '"' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 32 || c as u32 == 127 => {
                let u = c as u32;
                out.push('\\');
                out.push(char::from(b'0' + (u >> 6) as u8));
                out.push(char::from(b'0' + ((u >> 3) & 7) as u8));
                out.push(char::from(b'0' + (u & 7) as u8));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The first word of `text` unquoted, if `text` is exactly one word
/// (Click's `cp_string` without a rest).
pub fn string_word(text: &str) -> Option<String> {
    let s = text.as_bytes();
    let end = skip_spacevec_item(s, 0);
    if end == 0 || end != s.len() {
        return None;
    }
    Some(unquote(text))
}

/// What a variable reference looks like: `$name`, `${name}` or
/// `$(handler args)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarKind {
    /// `$name` (also `$?`, `$#`, `$$`).
    Plain,
    /// `${name}`.
    Braced,
    /// `$(handler args)`: a read handler's value.
    Call,
}

/// Substitutes variables and handler calls in `text` (Click's
/// `cp_expand`): `lookup` gives a variable's value or a call's result, or
/// `None` to leave the reference as written. Nothing is substituted
/// inside single quotes. With `quote_result` (or inside double quotes)
/// the value is quoted so that a later [`unquote`] gives it back as it was.
pub fn expand(
    text: &str,
    lookup: &mut dyn FnMut(&str, VarKind) -> Option<String>,
    quote_result: bool,
) -> String {
    expand_at(text, lookup, quote_result, 0)
}

fn expand_at(
    text: &str,
    lookup: &mut dyn FnMut(&str, VarKind) -> Option<String>,
    quote_result: bool,
    depth: u32,
) -> String {
    if !text.contains('$') {
        return text.to_string();
    }
    let s = text.as_bytes();
    let end = s.len();
    let mut out = String::new();
    let mut uninterpolated = 0;
    let mut quote = 0u8;
    let mut i = 0;
    while i < end {
        match s[i] {
            b'\\' if i + 1 < end && quote == b'"' => i += 1,
            q @ (b'\'' | b'"') => {
                if quote == 0 {
                    quote = q;
                } else if quote == q {
                    quote = 0;
                }
            }
            b'/' if quote == 0 && starts_comment(s, i) => {
                i = skip_comment_space(s, i);
                continue;
            }
            b'$' if i + 1 < end && quote != b'\'' && depth <= MAX_EXPAND_DEPTH => {
                let before = i;
                let mut expand_name = false;
                let (kind, name, next) = match s[i + 1] {
                    b'{' => {
                        let start = i + 2;
                        let Some(close) = s[start..].iter().position(|&b| b == b'}') else {
                            break;
                        };
                        expand_name = s[start..start + close].contains(&b'$');
                        (
                            VarKind::Braced,
                            &text[start..start + close],
                            start + close + 1,
                        )
                    }
                    b'(' => {
                        let start = i + 2;
                        let (mut level, mut nquote) = (1, 0u8);
                        let mut j = start;
                        while j < end && level > 0 {
                            match s[j] {
                                b'(' if nquote == 0 => level += 1,
                                b')' if nquote == 0 => level -= 1,
                                q @ (b'"' | b'\'') => {
                                    if nquote == 0 {
                                        nquote = q;
                                    } else if nquote == q {
                                        nquote = 0;
                                    }
                                }
                                b'\\' if j + 1 < end && nquote != b'\'' => j += 1,
                                b'$' if nquote != b'\'' => expand_name = true,
                                _ => {}
                            }
                            j += 1;
                        }
                        if level > 0 {
                            break;
                        }
                        (VarKind::Call, &text[start..j - 1], j)
                    }
                    b if b.is_ascii_alphanumeric() || b == b'_' => {
                        let start = i + 1;
                        let mut j = start;
                        while j < end && (s[j].is_ascii_alphanumeric() || s[j] == b'_') {
                            j += 1;
                        }
                        (VarKind::Plain, &text[start..j], j)
                    }
                    b'?' | b'#' | b'$' => (VarKind::Plain, &text[i + 1..i + 2], i + 2),
                    _ => {
                        i += 1;
                        continue;
                    }
                };
                out.push_str(&text[uninterpolated..before]);
                let name = if expand_name {
                    expand_at(name, lookup, false, depth + 1)
                } else {
                    name.to_string()
                };
                uninterpolated = next;
                match lookup(&name, kind) {
                    None => {
                        if expand_name {
                            out.push_str(&text[before..before + 2]);
                            out.push_str(&name);
                            out.push_str(&text[next - 1..next]);
                        } else {
                            uninterpolated = before;
                        }
                    }
                    Some(mut value) => {
                        bound(&mut value);
                        if quote == b'"' || (quote_result && quote == 0) {
                            let q = quote_str(&value);
                            let inner = &q[1..q.len() - 1];
                            if quote == b'"' {
                                out.push_str(inner);
                            } else {
                                out.push('"');
                                out.push_str(inner);
                                out.push('"');
                            }
                        } else {
                            out.push_str(&value);
                        }
                    }
                }
                if out.len() > MAX_TEXT {
                    bound(&mut out);
                    return out;
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if out.is_empty() && uninterpolated == 0 {
        return text.to_string();
    }
    out.push_str(&text[uninterpolated.min(end)..]);
    bound(&mut out);
    out
}

fn quote_str(value: &str) -> String {
    quote(value)
}

/// Click's `BoolArg`: `true`/`false`, `yes`/`no`, `1`/`0`, `t`/`f`,
/// `y`/`n`.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "0" | "n" | "f" | "false" | "no" => Some(false),
        "1" | "y" | "t" | "true" | "yes" => Some(true),
        _ => None,
    }
}

/// How Click writes a boolean.
pub fn bool_text(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

/// Click's `IntArg` reading of a signed 64-bit integer: an optional sign,
/// then `0x` hexadecimal, `0b` binary, a leading `0` octal, or decimal,
/// with `_` allowed between digits. `None` when malformed or out of range.
pub fn parse_int(text: &str) -> Option<i64> {
    let s = text.as_bytes();
    let mut i = 0;
    let negative = s.first() == Some(&b'-');
    if matches!(s.first(), Some(b'-' | b'+')) {
        i = 1;
    }
    let mut base = 10u32;
    if i + 2 < s.len() && s[i] == b'0' && (s[i + 1] == b'x' || s[i + 1] == b'X') {
        base = 16;
        i += 2;
    } else if i + 2 < s.len() && s[i] == b'0' && (s[i + 1] == b'b' || s[i + 1] == b'B') {
        base = 2;
        i += 2;
    } else if i < s.len() && s[i] == b'0' {
        base = 8;
    }
    if i >= s.len() {
        return None;
    }
    let mut v: i128 = 0;
    let mut last_digit = false;
    for &b in &s[i..] {
        if b == b'_' && last_digit {
            last_digit = false;
            continue;
        }
        let d = (b as char).to_digit(base)?;
        v = v * i128::from(base) + i128::from(d);
        if v > i128::from(i64::MAX) + 1 {
            return None;
        }
        last_digit = true;
    }
    if !last_digit {
        return None;
    }
    let v = if negative { -v } else { v };
    i64::try_from(v).ok()
}

/// Click's `DoubleArg` (C's `strtod` on the whole text, no leading
/// space): decimal with an optional exponent, `inf` and `nan` included
/// (C's hexadecimal reals are not).
pub fn parse_real(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.is_empty() || is_space(b[0]) {
        return None;
    }
    text.parse::<f64>().ok()
}

/// A real number as Click writes it (`String(double)`: C's `%.12g`).
pub fn real_text(x: f64) -> String {
    format_g(x, 12, false)
}

/// C's `%.{precision}g` (with `#`: `alt` keeps trailing zeros).
pub fn format_g(x: f64, precision: usize, alt: bool) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    let p = precision.max(1);
    if x == 0.0 {
        let z = if x.is_sign_negative() { "-0" } else { "0" };
        if alt && p > 1 {
            return format!("{z}.{}", "0".repeat(p - 1));
        }
        return z.into();
    }
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = if alt {
            mantissa.to_string()
        } else {
            trim_zeros(mantissa)
        };
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        let f = format!("{:.*}", decimals, x);
        if alt {
            f
        } else {
            trim_zeros(&f)
        }
    }
}

fn trim_zeros(s: &str) -> String {
    if !s.contains('.') {
        return s.to_string();
    }
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_quotes_and_skip_comments() {
        let mut t = String::from("  a \"b c\" 'd e' \\<0a 0b> /* x */ f");
        assert_eq!(shift_word(&mut t), "a");
        assert_eq!(shift_word(&mut t), "\"b c\"");
        assert_eq!(shift_word(&mut t), "'d e'");
        assert_eq!(shift_word(&mut t), "\\<0a 0b>");
        assert_eq!(shift_word(&mut t), "f");
        assert_eq!(shift_word(&mut t), "");
        assert_eq!(words("x  y\tz"), ["x", "y", "z"]);
        assert!(words("   ").is_empty());
    }

    #[test]
    fn unquote_as_click() {
        assert_eq!(unquote("\"c.count\""), "c.count");
        assert_eq!(unquote("'\"c.count\"'"), "\"c.count\"");
        assert_eq!(unquote("\"a\\tb\""), "a\tb");
        assert_eq!(unquote("\\<0a 09 01>"), "\n\t\u{1}");
        assert_eq!(unquote("\"\\<41 42>\"x"), "ABx");
        assert_eq!(unquote("plain // comment"), "plain");
        assert_eq!(unquote("'unterminated"), "unterminated");
        assert_eq!(unquote("\"\\101\\x41\""), "AA");
        assert_eq!(unquote("\"\\"), "\\");
    }

    #[test]
    fn quote_round_trips() {
        for s in ["", "a b", "$x", "tab\there", "\u{1}\n\"\\", "é"] {
            assert_eq!(unquote(&quote(s)), s, "{s:?}");
        }
        assert_eq!(quote("a$b"), "\"a\\$b\"");
    }

    #[test]
    fn expansion_as_cp_expand() {
        let mut vars = |name: &str, kind: VarKind| -> Option<String> {
            match (name, kind) {
                ("x", _) => Some("1".into()),
                ("sp", _) => Some("a b".into()),
                ("add 1 1", VarKind::Call) => Some("2".into()),
                ("c.count", VarKind::Call) => Some("0".into()),
                _ => None,
            }
        };
        assert_eq!(expand("$x ${x} $(add $x $x)", &mut vars, false), "1 1 2");
        assert_eq!(expand("'$x' \"$x\"", &mut vars, false), "'$x' \"1\"");
        assert_eq!(expand("$y $(nope)", &mut vars, false), "$y $(nope)");
        assert_eq!(expand("$sp", &mut vars, true), "\"a b\"");
        assert_eq!(expand("\"$(c.count)\"", &mut vars, false), "\"0\"");
        assert_eq!(expand("$", &mut vars, false), "$");
        assert_eq!(expand("$(unclosed", &mut vars, false), "$(unclosed");
        assert_eq!(expand("${unclosed", &mut vars, false), "${unclosed");
        assert_eq!(expand("a$x.b", &mut vars, false), "a1.b");
    }

    #[test]
    fn expansion_length_is_bounded() {
        let big = "é".repeat(MAX_TEXT / 3);
        let mut f = |_: &str, _: VarKind| Some(big.clone());
        let out = expand("$a$a$a$a$a$a", &mut f, false);
        assert!(out.len() <= MAX_TEXT && out.len() > MAX_TEXT - 4);
    }

    #[test]
    fn expansion_depth_is_bounded() {
        let mut calls = 0;
        let mut f = |name: &str, _: VarKind| -> Option<String> {
            calls += 1;
            Some(format!("$({name})"))
        };
        let deep = "$(".repeat(50) + &")".repeat(50);
        let _ = expand(&deep, &mut f, false);
        assert!(calls < 100);
    }

    #[test]
    fn numbers_as_click_reads_them() {
        assert_eq!(parse_int("10"), Some(10));
        assert_eq!(parse_int("0xA"), Some(10));
        assert_eq!(parse_int("-0x10"), Some(-16));
        assert_eq!(parse_int("017"), Some(15));
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("1_000"), Some(1000));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("9223372036854775808"), None);
        assert_eq!(parse_int("-9223372036854775808"), Some(i64::MIN));
        for bad in ["", "-", "1.5", "10x", "0x", "08", "_1", "1_"] {
            assert_eq!(parse_int(bad), None, "{bad}");
        }
        assert_eq!(parse_real("2.5"), Some(2.5));
        assert_eq!(parse_real("1e3"), Some(1000.0));
        assert_eq!(parse_real(" 1"), None);
        assert_eq!(parse_real("abc"), None);
        assert_eq!(parse_bool("yes"), Some(true));
        assert_eq!(parse_bool("True"), None);
    }

    proptest::proptest! {
        /// Hostile text: every function ends without a panic, and quoting
        /// gives back what it quoted.
        #[test]
        fn no_text_panics(t in "[ a$(){}\\\\\"'/*<>0-9x.é\n\t]{0,40}") {
            let mut rest = t.clone();
            for _ in 0..50 {
                if rest.is_empty() {
                    break;
                }
                let _ = shift_word(&mut rest);
            }
            let _ = words(&t);
            let _ = uncomment(&t);
            let _ = string_word(&t);
            let _ = parse_int(&t);
            let _ = parse_real(&t);
            let mut f = |n: &str, _: VarKind| Some(n.to_string());
            let _ = expand(&t, &mut f, true);
            proptest::prop_assert_eq!(unquote(&quote(&unquote(&t))), unquote(&t));
        }
    }

    #[test]
    fn reals_print_as_percent_12g() {
        assert_eq!(real_text(6.0), "6");
        assert_eq!(real_text(0.1), "0.1");
        assert_eq!(real_text(1.0 / 3.0), "0.333333333333");
        assert_eq!(real_text(1e20), "1e+20");
        assert_eq!(real_text(1.5e-7), "1.5e-07");
        assert_eq!(real_text(-2.5), "-2.5");
        assert_eq!(real_text(123456789012.0), "123456789012");
        assert_eq!(real_text(1234567890123.0), "1.23456789012e+12");
        assert_eq!(format_g(0.0001, 6, false), "0.0001");
    }
}
