//! The read handlers with parameters every `Script` has and that need
//! nothing but their arguments: arithmetic, comparisons, booleans,
//! `sprintf` and friends, as elements/standard/script.cc computes them
//! at user level (integers as signed 64-bit, reals when an argument is
//! not an integer, written as `%.12g`).

use super::text::{
    bool_text, parse_bool, parse_int, parse_real, quote, real_text, shift_word, string_word,
    unquote, words,
};

/// The names of the pure functions, for the `handlers` list and lookup.
pub const NAMES: &[&str] = &[
    "add", "sub", "min", "max", "mul", "div", "idiv", "mod", "rem", "neg", "abs", "eq", "ne", "gt",
    "ge", "lt", "le", "not", "sprintf", "first", "random", "and", "or", "nand", "nor", "if", "in",
    "length", "unquote", "htons", "htonl", "ntohs", "ntohl",
];

/// Calls function `name` on `args`; `None` when there is no such function.
pub fn call(name: &str, args: &str, rng: &mut Rng) -> Option<Result<String, String>> {
    Some(match name {
        "add" | "sub" | "min" | "max" | "mul" | "div" | "idiv" => arithmetic(name, args),
        "mod" | "rem" => mod_rem(name == "mod", args),
        "neg" | "abs" => neg_abs(name == "neg", args),
        "eq" | "ne" | "gt" | "ge" | "lt" | "le" => compare(name, args),
        "not" => parse_bool(args)
            .map(|b| bool_text(!b))
            .ok_or_else(|| "syntax error".to_string()),
        "and" | "or" | "nand" | "nor" => logic(name, args),
        "if" => if_(args),
        "in" => {
            let mut rest = args.to_string();
            let word = unquote(&shift_word(&mut rest));
            let mut answer = false;
            while !word.is_empty() && !rest.is_empty() && !answer {
                answer = word == unquote(&shift_word(&mut rest));
            }
            Ok(bool_text(answer))
        }
        "first" => {
            let mut rest = args.to_string();
            Ok(shift_word(&mut rest))
        }
        "length" => Ok(args.len().to_string()),
        "unquote" => Ok(unquote(args)),
        "htons" | "ntohs" => parse_int(args)
            .map(|x| (x as u16).swap_bytes().to_string())
            .ok_or_else(|| "syntax error".to_string()),
        "htonl" | "ntohl" => parse_int(args)
            .map(|x| (x as u32).swap_bytes().to_string())
            .ok_or_else(|| "syntax error".to_string()),
        "sprintf" => sprintf(args),
        "random" => random(args, rng),
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Num {
    Int(i64),
    Real(f64),
}

fn arithmetic(what: &str, args: &str) -> Result<String, String> {
    let ws = words(args);
    let mut reals = matches!(what, "div" | "idiv");
    let mut iacc: i64 = if matches!(what, "add" | "sub") { 0 } else { 1 };
    let mut dacc: f64 = iacc as f64;
    for (k, w) in ws.iter().enumerate() {
        let first = k == 0;
        let n = match parse_int(w) {
            Some(i) if !reals => Num::Int(i),
            _ => Num::Real(parse_real(w).ok_or("expected list of numbers")?),
        };
        match n {
            Num::Int(a) => {
                iacc = if first {
                    a
                } else {
                    match what {
                        "add" => iacc.wrapping_add(a),
                        "sub" => iacc.wrapping_sub(a),
                        "min" => iacc.min(a),
                        "max" => iacc.max(a),
                        _ => iacc.wrapping_mul(a),
                    }
                };
            }
            Num::Real(a) => {
                if !reals {
                    reals = true;
                    dacc = iacc as f64;
                }
                dacc = if first {
                    a
                } else {
                    match what {
                        "add" => dacc + a,
                        "sub" => dacc - a,
                        "min" => dacc.min(a),
                        "max" => dacc.max(a),
                        "mul" => dacc * a,
                        _ => dacc / a,
                    }
                };
            }
        }
    }
    if what == "idiv" {
        // C's cast of a real to an integer; out-of-range values saturate
        // instead of being undefined.
        return Ok((dacc as i64).to_string());
    }
    Ok(if reals {
        real_text(dacc)
    } else {
        iacc.to_string()
    })
}

fn two(args: &str) -> Result<(String, String), String> {
    let mut rest = args.to_string();
    let a = shift_word(&mut rest);
    let b = shift_word(&mut rest);
    if !rest.is_empty() || a.is_empty() || b.is_empty() {
        return Err("expected two numbers".into());
    }
    Ok((a, b))
}

fn mod_rem(is_mod: bool, args: &str) -> Result<String, String> {
    let (a, b) = two(args)?;
    match (parse_int(&a), parse_int(&b)) {
        (Some(a), Some(b)) => a
            .checked_rem(b)
            .map(|r| r.to_string())
            .ok_or_else(|| "division by zero".to_string()),
        _ if is_mod => Err("expected two numbers".into()),
        _ => match (parse_real(&a), parse_real(&b)) {
            (Some(a), Some(b)) => Ok(real_text(a % b)),
            _ => Err("expected two numbers".into()),
        },
    }
}

fn neg_abs(neg: bool, args: &str) -> Result<String, String> {
    if let Some(x) = parse_int(args) {
        let v = if neg || x < 0 { x.wrapping_neg() } else { x };
        return Ok(v.to_string());
    }
    let x = parse_real(args).ok_or("expected one number")?;
    Ok(real_text(if neg { -x } else { x.abs() }))
}

fn compare(what: &str, args: &str) -> Result<String, String> {
    use std::cmp::Ordering;
    let (a, b) = two(args)?;
    let ord = match (parse_int(&a), parse_int(&b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => match (parse_real(&a), parse_real(&b)) {
            // NaN compares as "greater", as C's `a < b ? .. : a == b ? ..`
            (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Greater),
            _ => unquote(&a).as_bytes().cmp(unquote(&b).as_bytes()),
        },
    };
    let r = match what {
        "eq" => ord == Ordering::Equal,
        "ne" => ord != Ordering::Equal,
        "lt" => ord == Ordering::Less,
        "ge" => ord != Ordering::Less,
        "gt" => ord == Ordering::Greater,
        _ => ord != Ordering::Greater,
    };
    Ok(bool_text(r))
}

fn logic(what: &str, args: &str) -> Result<String, String> {
    let zero = matches!(what, "and" | "nand");
    let mut value = zero;
    let mut rest = args.to_string();
    while value == zero && !rest.is_empty() {
        let x = parse_bool(&shift_word(&mut rest)).ok_or("syntax error")?;
        value = if zero { value && x } else { value || x };
    }
    if matches!(what, "nand" | "nor") {
        value = !value;
    }
    Ok(bool_text(value))
}

fn if_(args: &str) -> Result<String, String> {
    let mut rest = args.to_string();
    let c = parse_bool(&shift_word(&mut rest)).ok_or("syntax error")?;
    let yes = shift_word(&mut rest);
    if c {
        return Ok(yes);
    }
    Ok(shift_word(&mut rest))
}

/// A small xorshift generator: `random` needs no cryptographic quality,
/// and each Script has its own.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded from `seed` (never zero).
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        let span = hi - lo + 1;
        lo + if span == 0 {
            self.next()
        } else {
            self.next() % span
        }
    }
}

/// C's `RAND_MAX` on Linux.
const RAND_MAX: u64 = 0x7fff_ffff;

fn random(args: &str, rng: &mut Rng) -> Result<String, String> {
    let ws = words(args);
    let num = |w: &String| -> Result<u64, String> {
        parse_int(w)
            .and_then(|v| u32::try_from(v).ok())
            .map(u64::from)
            .ok_or_else(|| format!("bad N `{w}'"))
    };
    match ws.as_slice() {
        [] => Ok(rng.range(0, RAND_MAX).to_string()),
        [n] => {
            let n = num(n)?;
            if n == 0 {
                return Err("bad N".into());
            }
            Ok(rng.range(0, n - 1).to_string())
        }
        [a, b] => {
            let (a, b) = (num(a)?, num(b)?);
            if b < a {
                return Err("bad N".into());
            }
            Ok(rng.range(a, b).to_string())
        }
        _ => Err("too many arguments".into()),
    }
}

/// One `%` conversion's flags, width and precision.
#[derive(Default)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
    width: usize,
    precision: Option<usize>,
}

/// The widest field `sprintf` pads to: bounds the text a script can make.
const MAX_FIELD: usize = 4096;

impl Spec {
    fn pad(&self, sign: &str, prefix: &str, digits: &str, numeric: bool) -> String {
        let len = sign.len() + prefix.len() + digits.len();
        let fill = self.width.saturating_sub(len);
        if self.left {
            format!("{sign}{prefix}{digits}{}", " ".repeat(fill))
        } else if self.zero && numeric && self.precision.is_none() {
            format!("{sign}{prefix}{}{digits}", "0".repeat(fill))
        } else {
            format!("{}{sign}{prefix}{digits}", " ".repeat(fill))
        }
    }
}

fn sprintf(args: &str) -> Result<String, String> {
    const SYNTAX: &str = "syntax error";
    let mut rest = args.to_string();
    let format = unquote(&shift_word(&mut rest));
    let f: Vec<char> = format.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < f.len() {
        if f[i] != '%' {
            out.push(f[i]);
            i += 1;
            continue;
        }
        i += 1;
        let mut spec = Spec::default();
        while i < f.len() && matches!(f[i], '0' | '#' | '-' | ' ' | '+') {
            match f[i] {
                '0' => spec.zero = true,
                '#' => spec.alt = true,
                '-' => spec.left = true,
                ' ' => spec.space = true,
                _ => spec.plus = true,
            }
            i += 1;
        }
        if i < f.len() && f[i] == '*' {
            let w = parse_int(&shift_word(&mut rest)).ok_or(SYNTAX)?;
            if w < 0 {
                spec.left = true;
            }
            spec.width = w.unsigned_abs() as usize;
            i += 1;
        } else {
            while i < f.len() && f[i].is_ascii_digit() {
                spec.width = spec.width * 10 + (f[i] as usize - '0' as usize);
                spec.width = spec.width.min(MAX_FIELD);
                i += 1;
            }
        }
        if i < f.len() && f[i] == '.' {
            i += 1;
            if i < f.len() && f[i] == '*' {
                let p = parse_int(&shift_word(&mut rest)).ok_or(SYNTAX)?;
                spec.precision = Some(usize::try_from(p).map_err(|_| SYNTAX)?.min(MAX_FIELD));
                i += 1;
            } else {
                let mut p = 0usize;
                while i < f.len() && f[i].is_ascii_digit() {
                    p = (p * 10 + (f[i] as usize - '0' as usize)).min(MAX_FIELD);
                    i += 1;
                }
                spec.precision = Some(p);
            }
        }
        spec.width = spec.width.min(MAX_FIELD);
        // Length modifiers: h truncates to 16 bits; l, ll, L and q are
        // 64-bit here, as on Click's 64-bit builds.
        let mut half = false;
        while i < f.len() && matches!(f[i], 'h' | 'l' | 'L' | 'q') {
            half = f[i] == 'h';
            i += 1;
        }
        let Some(&conv) = f.get(i) else {
            return Err(SYNTAX.into());
        };
        i += 1;
        match conv {
            'o' | 'x' | 'X' | 'u' => {
                let v = parse_int(&shift_word(&mut rest)).ok_or(SYNTAX)?;
                let v = if half { u64::from(v as u16) } else { v as u64 };
                let mut digits = match conv {
                    'o' => format!("{v:o}"),
                    'x' => format!("{v:x}"),
                    'X' => format!("{v:X}"),
                    _ => v.to_string(),
                };
                if let Some(p) = spec.precision {
                    if digits.len() < p {
                        digits = "0".repeat(p - digits.len()) + &digits;
                    } else if p == 0 && v == 0 {
                        digits.clear();
                    }
                }
                let prefix = match conv {
                    'x' if spec.alt && v != 0 => "0x",
                    'X' if spec.alt && v != 0 => "0X",
                    'o' if spec.alt && !digits.starts_with('0') => "0",
                    _ => "",
                };
                out.push_str(&spec.pad("", prefix, &digits, true));
            }
            'd' | 'i' => {
                let v = parse_int(&shift_word(&mut rest)).ok_or(SYNTAX)?;
                let v = if half { i64::from(v as i16) } else { v };
                let mut digits = v.unsigned_abs().to_string();
                if let Some(p) = spec.precision {
                    if digits.len() < p {
                        digits = "0".repeat(p - digits.len()) + &digits;
                    } else if p == 0 && v == 0 {
                        digits.clear();
                    }
                }
                let sign = if v < 0 {
                    "-"
                } else if spec.plus {
                    "+"
                } else if spec.space {
                    " "
                } else {
                    ""
                };
                out.push_str(&spec.pad(sign, "", &digits, true));
            }
            '%' => out.push('%'),
            's' => {
                let w = shift_word(&mut rest);
                let mut s = string_word(&w).ok_or(SYNTAX)?;
                if let Some(p) = spec.precision {
                    if let Some((cut, _)) = s.char_indices().nth(p) {
                        s.truncate(cut);
                    }
                }
                out.push_str(&spec.pad("", "", &s, false));
            }
            _ => return Err(SYNTAX.into()),
        }
    }
    if !rest.is_empty() {
        return Err(SYNTAX.into());
    }
    Ok(out)
}

/// `catq`'s quoting, for the element.
pub fn quoted(text: &str) -> String {
    quote(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, args: &str) -> Result<String, String> {
        call(name, args, &mut Rng::new(7)).unwrap()
    }

    #[test]
    fn arithmetic_as_script_04() {
        assert_eq!(f("add", "1 2 3").unwrap(), "6");
        assert_eq!(f("sub", "10 2 2").unwrap(), "6");
        assert_eq!(f("min", "10 6 20").unwrap(), "6");
        assert_eq!(f("max", "-1 6 3").unwrap(), "6");
        assert_eq!(f("mul", "1 2 3").unwrap(), "6");
        assert_eq!(f("div", "75 2.5 5").unwrap(), "6");
        assert_eq!(f("idiv", "60 2 5").unwrap(), "6");
        assert_eq!(f("htonl", "100663296").unwrap(), "6");
        assert_eq!(f("htons", "1536").unwrap(), "6");
        assert_eq!(f("add", "0.5 1").unwrap(), "1.5");
        assert_eq!(f("add", "").unwrap(), "0");
        assert_eq!(f("div", "1 3").unwrap(), "0.333333333333");
        assert_eq!(f("div", "1 0").unwrap(), "inf");
        assert_eq!(f("idiv", "1 0").unwrap(), i64::MAX.to_string());
        assert!(f("add", "1 x").is_err());
        assert_eq!(
            f("add", "9223372036854775807 1").unwrap(),
            i64::MIN.to_string()
        );
    }

    #[test]
    fn mod_neg_abs() {
        assert_eq!(f("mod", "7 3").unwrap(), "1");
        assert_eq!(f("rem", "7.5 2").unwrap(), "1.5");
        assert!(f("mod", "7.5 2").is_err());
        assert!(f("mod", "7 0").is_err());
        assert!(f("mod", "-9223372036854775808 -1").is_err());
        assert!(f("mod", "7").is_err());
        assert_eq!(f("neg", "5").unwrap(), "-5");
        assert_eq!(f("abs", "-5").unwrap(), "5");
        assert_eq!(f("abs", "-2.5").unwrap(), "2.5");
        assert!(f("neg", "x").is_err());
    }

    #[test]
    fn comparisons() {
        assert_eq!(f("eq", "10 0xA").unwrap(), "true");
        assert_eq!(f("le", "9 8").unwrap(), "false");
        assert_eq!(f("eq", "10x 10x").unwrap(), "true");
        assert_eq!(f("lt", "abc abd").unwrap(), "true");
        assert_eq!(f("ge", "2.5 2.5").unwrap(), "true");
        assert_eq!(f("ne", "1 1.0").unwrap(), "false");
        assert!(f("eq", "1").is_err());
        assert!(f("eq", "1 2 3").is_err());
    }

    #[test]
    fn booleans_and_choices() {
        assert_eq!(f("not", "true").unwrap(), "false");
        assert_eq!(f("and", "true yes 1").unwrap(), "true");
        assert_eq!(f("and", "true false").unwrap(), "false");
        assert_eq!(f("or", "false false").unwrap(), "false");
        assert_eq!(f("nor", "false").unwrap(), "true");
        assert_eq!(f("nand", "").unwrap(), "false");
        assert!(f("and", "maybe").is_err());
        assert_eq!(f("if", "true a b").unwrap(), "a");
        assert_eq!(f("if", "false a b").unwrap(), "b");
        assert_eq!(f("in", "foo bar foo").unwrap(), "true");
        assert_eq!(f("in", "foo bar baz").unwrap(), "false");
        assert_eq!(f("first", "a b c").unwrap(), "a");
        assert_eq!(f("length", "abcdef").unwrap(), "6");
        assert_eq!(f("unquote", "\"a b\"").unwrap(), "a b");
    }

    #[test]
    fn sprintf_formats_as_c() {
        assert_eq!(f("sprintf", "\"%05x\" 127").unwrap(), "0007f");
        assert_eq!(f("sprintf", "\"%d-%s\" -3 \"a b\"").unwrap(), "-3-a b");
        assert_eq!(f("sprintf", "\"%-4d|\" 7").unwrap(), "7   |");
        assert_eq!(
            f("sprintf", "\"%+d %u %o %#X\" 5 6 8 255").unwrap(),
            "+5 6 10 0XFF"
        );
        assert_eq!(f("sprintf", "\"%*d\" 3 1").unwrap(), "  1");
        assert_eq!(f("sprintf", "\"%.3d %.1s %%\" 7 xyz").unwrap(), "007 x %");
        assert_eq!(f("sprintf", "\"%hd\" 65535").unwrap(), "-1");
        assert!(f("sprintf", "\"%d\"").is_err());
        assert!(f("sprintf", "\"%d\" 1 2").is_err());
        assert!(f("sprintf", "\"%q\" 1").is_err());
        assert!(f("sprintf", "\"%\"").is_err());
        let wide = f("sprintf", "\"%999999999d\" 1").unwrap();
        assert_eq!(wide.len(), MAX_FIELD);
    }

    #[test]
    fn random_stays_in_range() {
        let mut r = Rng::new(1);
        for _ in 0..100 {
            let v: u64 = call("random", "3 5", &mut r)
                .unwrap()
                .unwrap()
                .parse()
                .unwrap();
            assert!((3..=5).contains(&v));
            let v: u64 = call("random", "2", &mut r)
                .unwrap()
                .unwrap()
                .parse()
                .unwrap();
            assert!(v < 2);
        }
        assert!(call("random", "0", &mut r).unwrap().is_err());
        assert!(call("random", "5 3", &mut r).unwrap().is_err());
        assert!(call("random", "0 4294967295", &mut r).unwrap().is_ok());
        assert!(call("nosuch", "", &mut r).is_none());
    }
}
