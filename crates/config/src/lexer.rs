//! The Click lexer: words, `$variables`, punctuation, and raw argument
//! lists.
//!
//! It follows Click's `lib/lexer.cc`: a word is `[A-Za-z0-9_@]+`, and may
//! continue over a `/` that is followed by another word character (so
//! `a/b` is one name and `a//b` is `a` and a comment). Comments are
//! skipped; a `#` at the very start of a line starts a preprocessor line,
//! which is ignored. The text between `(` and its `)` is never tokenized:
//! the parser asks for it raw with [`Lexer::config`].

use crate::scan;
use crate::source::{Diagnostic, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// Identifier, number or keyword.
    Word,
    /// `$name`.
    Var,
    /// `->`.
    Arrow,
    /// `=>`.
    Arrow2,
    /// `::`.
    Colon2,
    /// `||`.
    Bar2,
    /// `...`.
    Dots,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Bar,
    /// Any other character.
    Other,
    Eof,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

/// Why an argument list did not end.
pub(crate) struct Unterminated(pub Diagnostic);

pub(crate) struct Lexer<'a> {
    text: &'a str,
    file: u32,
    pos: usize,
    /// Diagnostics for unterminated comments.
    pub errors: Vec<Diagnostic>,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str, file: u32) -> Lexer<'a> {
        Lexer {
            text,
            file,
            pos: 0,
            errors: Vec::new(),
        }
    }

    pub fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    /// Moves to byte offset `pos` (used after reading an argument list).
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos;
    }

    /// Skips whitespace, comments and preprocessor lines.
    fn skip_trivia(&mut self) {
        let b = self.text.as_bytes();
        loop {
            while self.pos < b.len() && scan::is_space(b[self.pos]) {
                self.pos += 1;
            }
            if scan::comment_at(b, self.pos) {
                match scan::skip_comment(b, self.pos) {
                    Some(end) => self.pos = end,
                    None => {
                        let at = self.span(self.pos, self.pos + 2);
                        self.errors.push(
                            Diagnostic::error(at, "unterminated comment")
                                .with_help("close the comment with `*/`"),
                        );
                        self.pos = b.len();
                    }
                }
            } else if self.pos < b.len()
                && b[self.pos] == b'#'
                && (self.pos == 0 || matches!(b[self.pos - 1], b'\n' | b'\r'))
            {
                // Click's preprocessor lines (`# 12 "file.click"`) only
                // renumber lines; they carry nothing we need.
                self.pos = scan::next_line(b, self.pos);
            } else {
                return;
            }
        }
    }

    pub fn next(&mut self) -> Token {
        self.skip_trivia();
        let b = self.text.as_bytes();
        let start = self.pos;
        let Some(&c) = b.get(start) else {
            return Token {
                kind: Tok::Eof,
                start,
                end: start,
            };
        };
        let at = |i: usize| b.get(i).copied().unwrap_or(0);
        let (kind, len) = if scan::is_word(c) {
            let mut i = start + 1;
            loop {
                while i < b.len() && scan::is_word(b[i]) {
                    i += 1;
                }
                if at(i) == b'/' && scan::is_word(at(i + 1)) {
                    i += 1;
                } else {
                    break;
                }
            }
            (Tok::Word, i - start)
        } else if c == b'$' && scan::is_var(at(start + 1)) {
            let mut i = start + 1;
            while i < b.len() && scan::is_var(b[i]) {
                i += 1;
            }
            (Tok::Var, i - start)
        } else {
            match (c, at(start + 1)) {
                (b'-', b'>') => (Tok::Arrow, 2),
                (b'=', b'>') => (Tok::Arrow2, 2),
                (b':', b':') => (Tok::Colon2, 2),
                (b'|', b'|') => (Tok::Bar2, 2),
                (b'.', b'.') if at(start + 2) == b'.' => (Tok::Dots, 3),
                (b'(', _) => (Tok::LParen, 1),
                (b')', _) => (Tok::RParen, 1),
                (b'[', _) => (Tok::LBracket, 1),
                (b']', _) => (Tok::RBracket, 1),
                (b'{', _) => (Tok::LBrace, 1),
                (b'}', _) => (Tok::RBrace, 1),
                (b',', _) => (Tok::Comma, 1),
                (b';', _) => (Tok::Semi, 1),
                (b'|', _) => (Tok::Bar, 1),
                _ => {
                    let ch = self.text[start..].chars().next().map_or(1, char::len_utf8);
                    (Tok::Other, ch)
                }
            }
        };
        self.pos = start + len;
        Token {
            kind,
            start,
            end: start + len,
        }
    }

    /// Reads the raw text of an argument list whose `(` is at `open`, up to
    /// the matching `)`, as Click's `lex_config` does: parentheses nest, and
    /// comments, quoted strings and `\<...>` literals are skipped whole.
    /// Returns the byte range of the text between the parentheses and
    /// leaves the lexer after the `)`.
    pub fn config(&mut self, open: usize) -> Result<(usize, usize), Unterminated> {
        let b = self.text.as_bytes();
        let start = open + 1;
        let mut depth = 1usize;
        let mut i = start;
        let opened_here = self.span(open, open + 1);
        // The first comment, string or data literal that hid a `)`: the
        // likely reason the list does not end where the user thinks.
        let mut hid_paren: Option<(usize, usize)> = None;
        let mut note_hidden = |from: usize, to: usize| {
            if hid_paren.is_none() && b[from..to].contains(&b')') {
                hid_paren = Some((from, to));
            }
        };
        let inside = |lexer: &Lexer, at: usize, len: usize, what: &str, help: &str| {
            Unterminated(
                Diagnostic::error(lexer.span(at, at + len), format!("unterminated {what}"))
                    .with_help(help.to_string())
                    .with_note(opened_here, "in the argument list that starts here"),
            )
        };
        while i < b.len() {
            match b[i] {
                b'(' => {
                    depth += 1;
                    i += 1;
                }
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = i + 1;
                        return Ok((start, i));
                    }
                    i += 1;
                }
                b'/' if scan::comment_at(b, i) => match scan::skip_comment(b, i) {
                    Some(end) => {
                        note_hidden(i, end);
                        i = end
                    }
                    None => {
                        return Err(inside(self, i, 2, "comment", "close the comment with `*/`"))
                    }
                },
                b'"' | b'\'' => match scan::skip_quote(b, i) {
                    Some(end) => {
                        note_hidden(i, end);
                        i = end
                    }
                    None => {
                        let q = b[i] as char;
                        return Err(inside(
                            self,
                            i,
                            1,
                            "string",
                            &format!("close the string with `{q}`"),
                        ));
                    }
                },
                b'\\' if scan::data_at(b, i) => match scan::skip_data(b, i) {
                    Some(end) => {
                        note_hidden(i, end);
                        i = end
                    }
                    None => {
                        return Err(inside(
                            self,
                            i,
                            2,
                            "data literal `\\<...>`",
                            "close the data literal with `>`",
                        ))
                    }
                },
                _ => i = scan::next_special(b, i + 1, scan::LEX),
            }
        }
        self.pos = b.len();
        let mut d = Diagnostic::error(opened_here, "unterminated argument list")
            .with_help("this `(` has no matching `)`");
        if let Some((from, to)) = hid_paren {
            let what = match b[from] {
                b'/' => "comment",
                b'\\' => "data literal, which ends only at `>`,",
                _ => "string",
            };
            d = d.with_note(
                self.span(from, to),
                format!("a `)` inside this {what} does not close the argument list"),
            );
        }
        Err(Unterminated(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Tok, &str)> {
        let mut lexer = Lexer::new(text, 0);
        let mut out = Vec::new();
        loop {
            let t = lexer.next();
            if t.kind == Tok::Eof {
                return out;
            }
            out.push((t.kind, &text[t.start..t.end]));
        }
    }

    #[test]
    fn words_and_punctuation() {
        assert_eq!(
            kinds("a/b::Foo@1 -> [0]c; x||y ... $v | . =>"),
            vec![
                (Tok::Word, "a/b"),
                (Tok::Colon2, "::"),
                (Tok::Word, "Foo@1"),
                (Tok::Arrow, "->"),
                (Tok::LBracket, "["),
                (Tok::Word, "0"),
                (Tok::RBracket, "]"),
                (Tok::Word, "c"),
                (Tok::Semi, ";"),
                (Tok::Word, "x"),
                (Tok::Bar2, "||"),
                (Tok::Word, "y"),
                (Tok::Dots, "..."),
                (Tok::Var, "$v"),
                (Tok::Bar, "|"),
                (Tok::Other, "."),
                (Tok::Arrow2, "=>"),
            ]
        );
    }

    #[test]
    fn slash_continues_a_word_only_before_a_word_character() {
        assert_eq!(
            kinds("a//b\nc/ d/*x*/e"),
            vec![
                (Tok::Word, "a"),
                (Tok::Word, "c"),
                (Tok::Other, "/"),
                (Tok::Word, "d"),
                (Tok::Word, "e")
            ]
        );
    }

    #[test]
    fn preprocessor_lines_only_at_line_start() {
        assert_eq!(
            kinds("#line 3\na # b\n#define X\r\nc"),
            vec![
                (Tok::Word, "a"),
                (Tok::Other, "#"),
                (Tok::Word, "b"),
                (Tok::Word, "c")
            ]
        );
    }

    #[test]
    fn non_ascii_is_one_token() {
        assert_eq!(kinds("é"), vec![(Tok::Other, "é")]);
    }

    #[test]
    fn unterminated_comment_is_reported_at_its_start() {
        let mut lexer = Lexer::new("a /* b", 0);
        lexer.next();
        assert_eq!(lexer.next().kind, Tok::Eof);
        assert_eq!(lexer.errors.len(), 1);
        assert_eq!(lexer.errors[0].span, Span::new(0, 2, 4));
    }

    #[test]
    fn config_skips_nested_parens_quotes_comments_and_data() {
        let text = r#"(a (b) ")" ')' // )
 /* ) */ \<00 /* > */ 11>) x"#;
        let mut lexer = Lexer::new(text, 0);
        let (s, e) = lexer.config(0).ok().unwrap();
        assert_eq!(&text[e..], ") x");
        assert_eq!(s, 1);
        assert_eq!(lexer.next().kind, Tok::Word);
    }

    #[test]
    fn config_errors_point_at_the_culprit() {
        let cases = [
            ("Foo(a, b", 3, "unterminated argument list"),
            ("Foo(a, \"b)", 7, "unterminated string"),
            ("Foo(a, 'b)", 7, "unterminated string"),
            ("Foo(a /* b)", 6, "unterminated comment"),
            ("Foo(\\<00 11)", 4, "unterminated data literal `\\<...>`"),
        ];
        for (text, at, message) in cases {
            let mut lexer = Lexer::new(text, 0);
            let Err(Unterminated(d)) = lexer.config(3) else {
                panic!("{text} should not lex");
            };
            assert_eq!(d.span.start, at, "{text}");
            assert_eq!(d.message, message, "{text}");
        }
    }
}
