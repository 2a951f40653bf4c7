//! Source files, byte spans into them, and rustc-style rendering of
//! diagnostics with the offending text underlined.
//!
//! A [`Span`] is a pair of byte offsets plus the index of its file in a
//! [`SourceMap`]; lines and columns are only computed when a diagnostic is
//! shown. Columns count characters, so a tab is one column; the underline
//! copies the tabs of the source line so that it still lines up in a
//! terminal.

use crate::scan;
use std::borrow::Borrow;
use std::fmt;

/// One configuration text and the name it is reported under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// File path, or `"<string>"` for text that did not come from a file.
    pub name: String,
    /// The whole text.
    pub text: String,
}

impl Source {
    /// A source with the given name and text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        Source {
            name: name.into(),
            text: text.into(),
        }
    }

    /// A source that did not come from a file, reported as `<string>`.
    pub fn from_string(text: impl Into<String>) -> Source {
        Source::new("<string>", text)
    }
}

/// A byte range `start..end` in file `file` of a [`SourceMap`].
///
/// Offsets always fall on character boundaries. An empty span (`start ==
/// end`) marks a position, such as the end of the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// Index of the file in its [`SourceMap`].
    pub file: u32,
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The span `start..end` of `file`.
    pub fn new(file: u32, start: usize, end: usize) -> Span {
        Span { file, start, end }
    }

    /// The smallest span covering `self` and `other` (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no text.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// An error found in a configuration, located in its source.
///
/// Every diagnostic this crate produces is an error: a configuration with
/// any diagnostic is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The offending text; it is underlined when rendered.
    pub span: Span,
    /// What is wrong, in one line, without a trailing period.
    pub message: String,
    /// How to fix it, if we can tell.
    pub help: Option<String>,
    /// Related places, such as a first declaration.
    pub notes: Vec<(Span, String)>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            span,
            message: message.into(),
            help: None,
            notes: Vec::new(),
        }
    }

    /// Adds (or replaces) the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Adds a note pointing at another place.
    pub fn with_note(mut self, span: Span, note: impl Into<String>) -> Diagnostic {
        self.notes.push((span, note.into()));
        self
    }

    /// Renders the diagnostic against `map` (see [`SourceMap::render`]).
    pub fn render(&self, map: &SourceMap) -> String {
        map.render(self)
    }
}

/// The message alone, without location; use [`SourceMap::render`] to show
/// it to a user.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// The end of the note on a redeclaration that points at the first
/// declaration; Click prints it as an error line of its own.
pub const PREVIOUSLY_DECLARED: &str = "previously declared here";

struct File {
    source: Source,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
    /// The preprocessor line directives, in order (see [`line_directives`]).
    directives: Vec<LineDirective>,
}

/// A `# N "file"` line (as `cpp` writes them, or `#line N "file"`): the
/// line after it is line `N` of `file`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LineDirective {
    /// 0-based index of the directive's own line.
    line: usize,
    /// The number of the line that follows it.
    next: usize,
    /// The file name it gives, if any; an empty name means the source's
    /// own name again, as in Click's lexer.
    name: Option<String>,
}

/// The line directives of `text`: lines starting with `#` outside comments,
/// quoted strings and data literals, the only places Click's lexer looks
/// for them (`Lexer::FileState::process_line_directive`). Lines that are
/// not a well-formed directive renumber nothing.
fn line_directives(text: &str) -> Vec<LineDirective> {
    let b = text.as_bytes();
    if memchr::memchr(b'#', b).is_none() {
        // A directive is a line that starts with `#`.
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut line = 0;
    let mut i = 0;
    // Counts the line breaks in `b[from..to]` (`\n`, `\r\n` or `\r`).
    let breaks = |from: usize, to: usize| {
        (from..to.min(b.len()))
            .filter(|&j| b[j] == b'\n' || (b[j] == b'\r' && b.get(j + 1) != Some(&b'\n')))
            .count()
    };
    while i < b.len() {
        let skip_to = if scan::comment_at(b, i) {
            Some(scan::skip_comment(b, i).unwrap_or(b.len()))
        } else if b[i] == b'"' || b[i] == b'\'' {
            Some(scan::skip_quote(b, i).unwrap_or(b.len()))
        } else if scan::data_at(b, i) {
            Some(scan::skip_data(b, i).unwrap_or(b.len()))
        } else {
            None
        };
        if let Some(end) = skip_to {
            line += breaks(i, end);
            i = end;
            continue;
        }
        match b[i] {
            b'\n' => line += 1,
            b'\r' if b.get(i + 1) != Some(&b'\n') => line += 1,
            b'#' if i == 0 || matches!(b[i - 1], b'\n' | b'\r') => {
                let end = scan::next_line(b, i);
                if let Some(d) = parse_directive(&text[i..end], line) {
                    out.push(d);
                }
                // `next_line` stops after the line break, which `breaks`
                // counts.
                line += breaks(i, end);
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads one directive line (Click's syntax: `#`, optional `line`, the
/// number, an optional quoted file name).
fn parse_directive(l: &str, line: usize) -> Option<LineDirective> {
    let rest = l[1..].trim_start_matches([' ', '\t']);
    let rest = match rest.strip_prefix("line") {
        Some(r) if r.starts_with([' ', '\t']) => r.trim_start_matches([' ', '\t']),
        _ => rest,
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    // Bounded: a line number that does not fit is no directive.
    let next: usize = rest[..digits].parse().ok()?;
    let rest = rest[digits..].trim_start_matches([' ', '\t']);
    let name = rest.strip_prefix('"').map(|q| {
        let q = q.trim_end_matches(['\n', '\r']);
        let mut name = String::new();
        let mut chars = q.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => name.extend(chars.next()),
                c => name.push(c),
            }
        }
        name
    });
    Some(LineDirective { line, next, name })
}

/// The sources a configuration was read from, indexed by [`Span::file`].
#[derive(Default)]
pub struct SourceMap {
    files: Vec<File>,
}

impl fmt::Debug for SourceMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.files.iter().map(|file| &file.source.name))
            .finish()
    }
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Adds a source and returns its index, to be used in [`Span::file`].
    pub fn add(&mut self, source: Source) -> u32 {
        let bytes = source.text.as_bytes();
        let mut line_starts = vec![0];
        let mut breaks = memchr::memchr2_iter(b'\n', b'\r', bytes);
        while let Some(i) = breaks.next() {
            if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                // `\r\n` is one break; the `\n` is the next match.
                breaks.next();
                line_starts.push(i + 2);
            } else {
                line_starts.push(i + 1);
            }
        }
        let index = u32::try_from(self.files.len()).expect("more than 2^32 source files");
        let directives = line_directives(&source.text);
        self.files.push(File {
            source,
            line_starts,
            directives,
        });
        index
    }

    /// The source with index `file`.
    pub fn get(&self, file: u32) -> Option<&Source> {
        self.files.get(file as usize).map(|f| &f.source)
    }

    /// 1-based line and column of the start of `span`; columns count
    /// characters (a tab is one column). `(0, 0)` if the file is unknown.
    pub fn line_col(&self, span: impl Borrow<Span>) -> (usize, usize) {
        let span = span.borrow();
        match self.files.get(span.file as usize) {
            Some(file) => {
                let (line, start) = file.line_of(span.start);
                let col = file.text_between(start, span.start).chars().count() + 1;
                (line + 1, col)
            }
            None => (0, 0),
        }
    }

    /// Renders a diagnostic the way rustc does:
    ///
    /// ```text
    /// error: unknown element class `Discrad`
    ///   --> router.click:12:10
    ///    |
    /// 12 |     q -> Discrad;
    ///    |          ^^^^^^^
    ///    = help: did you mean `Discard`?
    /// ```
    ///
    /// Each note follows with its own snippet.
    pub fn render(&self, diag: &Diagnostic) -> String {
        self.render_as("error", diag)
    }

    /// [`SourceMap::render`] for a warning, such as those of
    /// [`Router::warnings`](crate::Router::warnings).
    pub fn render_warning(&self, diag: &Diagnostic) -> String {
        self.render_as("warning", diag)
    }

    fn render_as(&self, severity: &str, diag: &Diagnostic) -> String {
        let mut lines: Vec<usize> = vec![self.line_col(diag.span).0];
        lines.extend(diag.notes.iter().map(|(span, _)| self.line_col(span).0));
        let width = lines.iter().max().map_or(1, |&n| n.to_string().len());
        let mut out = format!("{severity}: {}\n", diag.message);
        self.snippet(&mut out, diag.span, width);
        for (span, note) in &diag.notes {
            out.push_str(&format!("{:width$} = note: {note}\n", ""));
            self.snippet(&mut out, *span, width);
        }
        if let Some(help) = &diag.help {
            out.push_str(&format!("{:width$} = help: {help}\n", ""));
        }
        out
    }

    /// A diagnostic on one line as Click prints it, `FILE:LINE: message`
    /// (`prefix` before the message, such as `warning: `), names quoted
    /// `'x'` as Click quotes them; help and notes are left out.
    ///
    /// Places follow the source's line directives (`# 12 "file.click"`, as
    /// `cpp` leaves them), as Click's landmarks do. A note that Click
    /// gives as an error line of its own (a redeclaration's
    /// [`PREVIOUSLY_DECLARED`]) follows on its own line.
    pub fn render_click(&self, diag: &Diagnostic, prefix: &str) -> String {
        let line = |span: Span, message: &str| {
            let place = self
                .click_place(span)
                .map_or(String::new(), |(name, line)| format!("{name}:{line}: "));
            format!("{place}{prefix}{}\n", message.replace('`', "'"))
        };
        let mut out = line(diag.span, &diag.message);
        for (span, note) in &diag.notes {
            if note.ends_with(PREVIOUSLY_DECLARED) {
                out.push_str(&line(*span, note));
            }
        }
        out
    }

    /// The file name and 1-based line of `span` as Click reports them:
    /// after the line directives before it. `None` if the file is unknown.
    pub fn click_place(&self, span: Span) -> Option<(&str, usize)> {
        let file = self.files.get(span.file as usize)?;
        let (line, _) = file.line_of(span.start);
        let mut name = file.source.name.as_str();
        let mut number = line + 1;
        for d in file.directives.iter().take_while(|d| d.line < line) {
            match d.name.as_deref() {
                Some("") => name = file.source.name.as_str(),
                Some(n) => name = n,
                None => {}
            }
            number = d.next + (line - d.line - 1);
        }
        Some((name, number))
    }

    /// Renders several diagnostics separated by blank lines.
    pub fn render_all(&self, diags: &[Diagnostic]) -> String {
        diags
            .iter()
            .map(|d| self.render(d))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn snippet(&self, out: &mut String, span: Span, width: usize) {
        let Some(file) = self.files.get(span.file as usize) else {
            return;
        };
        let (line, col) = self.line_col(span);
        out.push_str(&format!(
            "{:width$}--> {}:{line}:{col}\n",
            "", file.source.name
        ));
        out.push_str(&format!("{:width$} |\n", ""));
        let (_, line_start) = file.line_of(span.start);
        let line_end = file.line_end(line_start);
        let text = file.text_between(line_start, line_end);
        out.push_str(&format!("{line:>width$} | {text}\n"));
        // Copy tabs from the source line so the carets stay aligned.
        let before: String = file
            .text_between(line_start, span.start)
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let under_end = span.end.clamp(span.start, line_end);
        let carets = file
            .text_between(span.start, under_end)
            .chars()
            .count()
            .max(1);
        out.push_str(&format!("{:width$} | {before}{}\n", "", "^".repeat(carets)));
    }
}

impl File {
    /// 0-based line index containing `offset`, and that line's start.
    fn line_of(&self, offset: usize) -> (usize, usize) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        (line, self.line_starts[line])
    }

    /// End of the line starting at `start`, before its line break.
    fn line_end(&self, start: usize) -> usize {
        let bytes = self.source.text.as_bytes();
        let mut end = start.min(bytes.len());
        while end < bytes.len() && bytes[end] != b'\n' && bytes[end] != b'\r' {
            end += 1;
        }
        end
    }

    /// Text between two offsets, tolerating offsets past the end or off a
    /// character boundary (they come from callers we do not control).
    fn text_between(&self, start: usize, end: usize) -> &str {
        let text = &self.source.text;
        let end = end.min(text.len());
        let start = start.min(end);
        text.get(start..end).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_with(text: &str) -> (SourceMap, u32) {
        let mut map = SourceMap::new();
        let file = map.add(Source::new("router.click", text));
        (map, file)
    }

    #[test]
    fn line_col_counts_from_one() {
        let (map, f) = map_with("ab\ncd\r\nef\rgh");
        assert_eq!(map.line_col(Span::new(f, 0, 0)), (1, 1));
        assert_eq!(map.line_col(Span::new(f, 1, 2)), (1, 2));
        assert_eq!(map.line_col(Span::new(f, 3, 4)), (2, 1));
        let by_ref = &Span::new(f, 7, 8);
        assert_eq!(map.line_col(by_ref), (3, 1));
        assert_eq!(map.line_col(Span::new(f, 10, 11)), (4, 1));
        assert_eq!(map.line_col(Span::new(9, 0, 0)), (0, 0));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let (map, f) = map_with("é\tx");
        assert_eq!(map.line_col(Span::new(f, 3, 4)), (1, 3));
    }

    #[test]
    fn render_underlines_the_span() {
        let mut text = String::new();
        for _ in 0..11 {
            text.push_str("// filler\n");
        }
        text.push_str("    q -> Discrad;\n");
        let (map, f) = map_with(&text);
        let start = text.find("Discrad").unwrap();
        let diag = Diagnostic::error(
            Span::new(f, start, start + 7),
            "unknown element class `Discrad`",
        )
        .with_help("did you mean `Discard`?");
        assert_eq!(
            map.render(&diag),
            "error: unknown element class `Discrad`\n  \
             --> router.click:12:10\n   \
             |\n\
             12 |     q -> Discrad;\n   \
             |          ^^^^^^^\n   \
             = help: did you mean `Discard`?\n"
        );
    }

    #[test]
    fn render_keeps_tabs_aligned_and_shows_notes() {
        let text = "x :: Queue;\n\tx :: Queue;\n";
        let (map, f) = map_with(text);
        let diag = Diagnostic::error(Span::new(f, 13, 14), "redeclaration of element `x`")
            .with_note(Span::new(f, 0, 1), "`x` first declared here");
        assert_eq!(
            map.render(&diag),
            "error: redeclaration of element `x`\n \
             --> router.click:2:2\n  \
             |\n\
             2 | \tx :: Queue;\n  \
             | \t^\n  \
             = note: `x` first declared here\n \
             --> router.click:1:1\n  \
             |\n\
             1 | x :: Queue;\n  \
             | ^\n"
        );
    }

    #[test]
    fn render_empty_span_at_end_of_file() {
        let (map, f) = map_with("a ->");
        let diag = Diagnostic::error(Span::new(f, 4, 4), "expected an element after `->`");
        let out = map.render(&diag);
        assert!(out.contains("1:5"), "{out}");
        assert!(out.ends_with("  |     ^\n"), "{out}");
    }

    #[test]
    fn click_places_follow_line_directives() {
        let text = "\nx :: Idle;\n# 1 \"B\" 1\nx :: Idle;\n# 5 \"A\" 2\ny :: Idle;\n\
                    /*\n# 40 \"C\"\n*/ z :: Message(\"\n# 50 \"D\"\n\");\n#line 7\nw;\n# 9 \"\"\nv;\n";
        let (map, f) = map_with(text);
        let at = |needle: &str| {
            let i = text.find(needle).unwrap();
            map.click_place(Span::new(f, i, i + 1)).unwrap()
        };
        assert_eq!(at("x :: Idle;\n#"), ("router.click", 2));
        assert_eq!(at("x :: Idle;\n# 5"), ("B", 1));
        assert_eq!(at("y ::"), ("A", 5));
        // Directives inside comments and strings renumber nothing.
        assert_eq!(at("z ::"), ("A", 8));
        // A directive without a name keeps the current one; an empty name
        // returns to the source's own.
        assert_eq!(at("w;"), ("A", 7));
        assert_eq!(at("v;"), ("router.click", 9));
        // Malformed or overlong numbers are no directives.
        let (map, f) = map_with("# x\n# 99999999999999999999999 \"Z\"\na;\n");
        assert_eq!(
            map.click_place(Span::new(f, 36, 37)),
            Some(("router.click", 3))
        );
    }

    #[test]
    fn render_click_gives_the_previous_declaration_its_own_line() {
        let (map, f) = map_with("x :: Idle;\n# 1 \"B\"\nx :: Idle;\n");
        let diag = Diagnostic::error(Span::new(f, 20, 21), "redeclaration of element `x`")
            .with_note(
                Span::new(f, 0, 1),
                format!("element `x` {PREVIOUSLY_DECLARED}"),
            )
            .with_note(Span::new(f, 0, 1), "another note");
        assert_eq!(
            map.render_click(&diag, ""),
            "B:1: redeclaration of element 'x'\n\
             router.click:1: element 'x' previously declared here\n"
        );
    }

    #[test]
    fn multi_line_span_is_underlined_to_end_of_first_line() {
        let (map, f) = map_with("Foo(a,\n b)");
        let diag = Diagnostic::error(Span::new(f, 3, 10), "bad");
        assert!(map.render(&diag).contains("1 | Foo(a,\n  |    ^^^\n"));
    }
}
