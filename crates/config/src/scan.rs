//! Byte-level skipping of the lexical units that may hide a `)`, `,` or
//! `;`: comments, quoted strings and `\<...>` data literals.
//!
//! Every delimiter is ASCII and UTF-8 continuation bytes are never ASCII,
//! so scanning bytes is exact and every returned offset is a character
//! boundary. Each function takes the offset of the unit's first byte and
//! returns the offset just past it, or `None` if the text ends first.

/// The bytes the argument-list lexer ([`crate::lexer::Lexer::config`])
/// acts on: `( ) / " ' \`.
pub(crate) const LEX: u8 = 1;
/// The bytes [`crate::args::split_top`] acts on: `/ " ' \ ( ) [ ] { } ,`.
pub(crate) const SPLIT: u8 = 2;
/// The bytes that keep an argument from being plain
/// ([`crate::args::process`]): `" ' \ $ # /`.
pub(crate) const PLAIN: u8 = 4;

/// For each byte, the scanners ([`LEX`], [`SPLIT`], [`PLAIN`]) that act on
/// it.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let lex = b"()/\"'\\";
    let split = b"/\"'\\()[]{},";
    let plain = b"\"'\\$#/";
    let mut i = 0;
    while i < lex.len() {
        t[lex[i] as usize] |= LEX;
        i += 1;
    }
    i = 0;
    while i < split.len() {
        t[split[i] as usize] |= SPLIT;
        i += 1;
    }
    i = 0;
    while i < plain.len() {
        t[plain[i] as usize] |= PLAIN;
        i += 1;
    }
    t
};

/// The offset of the first byte at or after `i` that the scanner `class`
/// acts on, or the end. The scanners' loops skip every other byte one at
/// a time; a configuration with a million inline routes is tens of
/// megabytes of such bytes, so they skip them here in a tight loop.
#[inline]
pub(crate) fn next_special(b: &[u8], mut i: usize, class: u8) -> usize {
    while i < b.len() && CLASS[b[i] as usize] & class == 0 {
        i += 1;
    }
    i
}

/// Whitespace as C's `isspace` sees it, which is what Click uses.
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Characters of identifiers and port numbers (Click: `isalnum`, `_`, `@`).
pub(crate) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'@'
}

/// Characters of a `$variable` name.
pub(crate) fn is_var(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether a `//` or `/*` comment starts at `i`.
pub(crate) fn comment_at(b: &[u8], i: usize) -> bool {
    b.get(i) == Some(&b'/') && matches!(b.get(i + 1), Some(b'/') | Some(b'*'))
}

/// Skips a comment starting at `i` (which must satisfy [`comment_at`]).
/// A `//` comment ends before its line break.
pub(crate) fn skip_comment(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i + 1) == Some(&b'/') {
        Some(line_end(b, i + 2))
    } else {
        block_comment_end(b, i + 2)
    }
}

/// Offset of the next line break at or after `i`, or the end.
pub(crate) fn line_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
        i += 1;
    }
    i
}

/// Offset just past the next line break at or after `i`, or the end.
pub(crate) fn next_line(b: &[u8], i: usize) -> usize {
    let i = line_end(b, i);
    if b.get(i) == Some(&b'\r') && b.get(i + 1) == Some(&b'\n') {
        i + 2
    } else {
        (i + 1).min(b.len())
    }
}

/// Offset past the `*/` closing a comment whose body starts at `i`.
fn block_comment_end(b: &[u8], mut i: usize) -> Option<usize> {
    while i + 1 < b.len() {
        if b[i] == b'*' && b[i + 1] == b'/' {
            return Some(i + 2);
        }
        i += 1;
    }
    None
}

/// Skips a quoted string whose opening `"` or `'` is at `i`. Double
/// quotes know backslash escapes, including `\<...>` data literals (whose
/// comments may contain quotes); single quotes know no escapes.
pub(crate) fn skip_quote(b: &[u8], i: usize) -> Option<usize> {
    let quote = b[i];
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            c if c == quote => return Some(j + 1),
            b'\\' if quote == b'"' => {
                if b.get(j + 1) == Some(&b'<') {
                    j = skip_data(b, j)?;
                } else {
                    j += 2;
                }
            }
            _ => j += 1,
        }
    }
    None
}

/// Skips a `\<...>` data literal whose backslash is at `i`. Comments
/// inside may contain `>`.
pub(crate) fn skip_data(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 2;
    while j < b.len() {
        if comment_at(b, j) {
            j = skip_comment(b, j)?;
        } else if b[j] == b'>' {
            return Some(j + 1);
        } else {
            j += 1;
        }
    }
    None
}

/// Whether a `\<` data literal starts at `i`.
pub(crate) fn data_at(b: &[u8], i: usize) -> bool {
    b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'<')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments() {
        let b = b"a // x\nb /* y */ c /* z";
        assert!(comment_at(b, 2));
        assert_eq!(skip_comment(b, 2), Some(6));
        assert_eq!(skip_comment(b, 9), Some(16));
        assert_eq!(skip_comment(b, 19), None);
    }

    #[test]
    fn quotes() {
        assert_eq!(skip_quote(br#""a\"b" x"#, 0), Some(6));
        assert_eq!(skip_quote(br#"'a\'b"#, 0), Some(4));
        assert_eq!(skip_quote(br#""\<00 /* " */ 11>" x"#, 0), Some(18));
        assert_eq!(skip_quote(br#""abc"#, 0), None);
        assert_eq!(skip_quote(br#""abc\"#, 0), None);
    }

    #[test]
    fn data() {
        assert_eq!(skip_data(b"\\<00 // >\n 11> x", 0), Some(14));
        assert_eq!(skip_data(b"\\<00 11", 0), None);
    }

    #[test]
    fn lines() {
        assert_eq!(next_line(b"ab\r\ncd", 0), 4);
        assert_eq!(next_line(b"ab", 0), 2);
    }
}
