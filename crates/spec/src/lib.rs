//! TOML description files (the cluster, multistage and virtual-router
//! files) read with errors that name their place: the toml parser's own
//! errors as `line L, column C: reason`, and the checks that follow as
//! `line L: reason` from the span of the value at fault.
//!
//! Each feature crate keeps its own error type (a tuple struct around the
//! message); [`Places`] is given its constructor, so that every message is
//! made here and the types stay the crates'.
//!
//! [`net`] holds the addresses, prefixes and MACs these files write.

#![forbid(unsafe_code)]

pub mod net;

use serde::de::DeserializeOwned;
use std::io::Read as _;
use std::path::Path;
use toml::Spanned;

/// Reads a description file's text into `T`, refusing it with the toml
/// parser's error as one line, with its line and column.
pub fn from_toml<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    toml::from_str(text).map_err(|e| toml_error(text, &e))
}

/// The toml parser's error as one line, with its line and column.
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let (line, column) = line_column(text, span.start);
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// Reads a description file: its text and the directory the files it
/// names (routes files) are read relative to.
pub fn read(path: &Path) -> Result<(String, &Path), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok((text, dir_of(path)))
}

/// The directory of `path`, `.` when it has none.
pub fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// 1-based line and column (in characters) of byte `offset`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    // Characters, not bytes: UTF-8 continuation bytes are skipped.
    let column = before[line_start..]
        .iter()
        .filter(|&&b| b & 0xc0 != 0x80)
        .count()
        + 1;
    (line, column)
}

/// Builds error messages of type `E` that start with a place in the file.
pub struct Places<'a, E> {
    text: &'a str,
    make: fn(String) -> E,
}

impl<'a, E> Places<'a, E> {
    /// Places in `text`; `make` turns a message into the error
    /// (`ClusterError`, the tuple struct's constructor).
    pub fn new(text: &'a str, make: fn(String) -> E) -> Self {
        Places { text, make }
    }

    /// `line N` of the value `s`.
    pub fn line<T>(&self, s: &Spanned<T>) -> String {
        format!("line {}", line_column(self.text, s.span().start).0)
    }

    /// `line N: message` as an error.
    pub fn err<T>(&self, s: &Spanned<T>, message: impl std::fmt::Display) -> E {
        (self.make)(format!("{}: {message}", self.line(s)))
    }

    /// An error with no place.
    pub fn plain(&self, message: impl Into<String>) -> E {
        (self.make)(message.into())
    }
}

/// Whether `s` is a name of at most `max` characters of a-z and 0-9, and
/// '-' when `dash`.
pub fn valid_name(s: &str, max: usize, dash: bool) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || (dash && b == b'-'))
}

/// Checks an interface name: what Linux takes (at most `max` bytes),
/// less what would need quoting in a Click configuration or a shell.
/// `noun` is what the file calls it ("interface", "link").
pub fn check_iface(s: &str, noun: &str, max: usize) -> Result<(), String> {
    if s.is_empty() {
        let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        return Err(format!("{article} {noun} name is empty"));
    }
    if s.len() > max {
        return Err(format!(
            "{noun} name `{s}` is {} bytes long; Linux allows at most {max}",
            s.len()
        ));
    }
    if s == "." || s == ".." || s.starts_with('-') {
        return Err(format!("`{s}` cannot be an interface name"));
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
    {
        return Err(format!(
            "{noun} name `{s}`: use letters, digits, '.', '-' and '_'"
        ));
    }
    Ok(())
}

/// Reads a text file the description names, of at most `max` bytes:
/// `cannot read SHOWN: reason`, `PATH is not a regular file`, `PATH is
/// larger than N MiB`.
pub fn read_limited(path: &Path, shown: &str, max: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max + 1).read_to_string(&mut text))
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    if text.len() as u64 > max {
        return Err(format!(
            "{} is larger than {} MiB",
            path.display(),
            max >> 20
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug)]
    struct E(String);

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct F {
        name: Spanned<String>,
    }

    #[test]
    fn lines_and_columns_count_characters() {
        let text = "a = 1\nné = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // After "né " (4 bytes, 3 characters).
        assert_eq!(line_column(text, 10), (2, 4));
        assert_eq!(line_column(text, 1000), (3, 1));
    }

    #[test]
    fn toml_errors_name_line_and_column() {
        let e = from_toml::<F>("name = \"x\"\nnmae = \"y\"\n")
            .err()
            .unwrap();
        assert!(
            e.starts_with("line 2, column 1: unknown field `nmae`"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let f: F = from_toml("\n\nname = \"x\"\n").unwrap();
        let p = Places::new("\n\nname = \"x\"\n", E);
        assert_eq!(p.err(&f.name, "bad").0, "line 3: bad");
        assert_eq!(p.plain("no place").0, "no place");
    }

    #[test]
    fn names() {
        assert!(valid_name("rb-4", 8, true));
        assert!(!valid_name("rb-4", 8, false));
        assert!(!valid_name("", 8, true));
        assert!(!valid_name("abcdefghi", 8, true));
        assert!(!valid_name("Rb4", 8, true));
    }

    #[test]
    fn interface_names() {
        assert!(check_iface("eth0.100", "interface", 15).is_ok());
        assert_eq!(
            check_iface("", "interface", 15).unwrap_err(),
            "an interface name is empty"
        );
        assert_eq!(
            check_iface("", "link", 15).unwrap_err(),
            "a link name is empty"
        );
        assert!(check_iface("abcdefghijklmnop", "link", 15)
            .unwrap_err()
            .contains("16 bytes long"));
        assert!(check_iface("-x", "link", 15).is_err());
        assert!(check_iface("a b", "link", 15).is_err());
    }

    #[test]
    fn limited_reads() {
        let dir = std::env::temp_dir().join(format!("bricks-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r");
        std::fs::write(&path, "x".repeat((1 << 20) + 1)).unwrap();
        assert!(read_limited(&path, "r", 1 << 20)
            .unwrap_err()
            .ends_with("is larger than 1 MiB"));
        assert_eq!(
            read_limited(&path, "r", 2 << 20).unwrap().len(),
            (1 << 20) + 1
        );
        assert!(read_limited(&dir, "d", 1 << 20)
            .unwrap_err()
            .ends_with("is not a regular file"));
        assert!(read_limited(&dir.join("none"), "none", 1 << 20)
            .unwrap_err()
            .starts_with("cannot read none: "));
        std::fs::remove_dir_all(&dir).unwrap();
        let (_, d) = read(Path::new("Cargo.toml")).unwrap();
        assert_eq!(d, Path::new("."));
        assert_eq!(dir_of(Path::new("a/b.toml")), Path::new("a"));
    }
}
