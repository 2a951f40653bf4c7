//! [`ArgText`]: an argument's text, a slice of its element's whole
//! argument text when it is written plainly, so that a route table given
//! inline (a million arguments) is not a million allocations.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, Range};
use std::sync::Arc;

/// An argument's text: read it as a `&str` (it dereferences to one).
/// Either a range of a text shared with the element's other arguments,
/// or a text of its own; cloning it copies no text.
#[derive(Clone)]
pub struct ArgText {
    buf: Arc<str>,
    start: u32,
    end: u32,
}

impl ArgText {
    /// `buf[range]`, sharing `buf`. A range past what 32 bits address
    /// (which no configuration within its limits reaches) is copied.
    pub fn shared(buf: &Arc<str>, range: Range<usize>) -> ArgText {
        match (u32::try_from(range.start), u32::try_from(range.end)) {
            (Ok(start), Ok(end)) if buf.get(range.clone()).is_some() => ArgText {
                buf: Arc::clone(buf),
                start,
                end,
            },
            _ => ArgText::from(&buf[range]),
        }
    }

    /// Whether the two are ranges of one shared text.
    pub fn shares_with(&self, other: &ArgText) -> bool {
        Arc::ptr_eq(&self.buf, &other.buf)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.buf[self.start as usize..self.end as usize]
    }
}

impl Default for ArgText {
    fn default() -> ArgText {
        ArgText::from("")
    }
}

impl From<&str> for ArgText {
    fn from(s: &str) -> ArgText {
        ArgText {
            buf: Arc::from(s),
            start: 0,
            end: s.len() as u32,
        }
    }
}

impl From<String> for ArgText {
    fn from(s: String) -> ArgText {
        ArgText::from(s.as_str())
    }
}

impl From<ArgText> for String {
    fn from(t: ArgText) -> String {
        t.as_str().to_string()
    }
}

impl Deref for ArgText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ArgText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for ArgText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for ArgText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ArgText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl PartialEq for ArgText {
    fn eq(&self, other: &ArgText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ArgText {}

impl Hash for ArgText {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialEq<str> for ArgText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ArgText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for ArgText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<ArgText> for str {
    fn eq(&self, other: &ArgText) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<ArgText> for &str {
    fn eq(&self, other: &ArgText) -> bool {
        *self == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_range_reads_and_compares_as_its_text() {
        let buf: Arc<str> = Arc::from("1.0.0.0/8 1, 2.0.0.0/8 2");
        let a = ArgText::shared(&buf, 13..24);
        assert_eq!(a, "2.0.0.0/8 2");
        assert_eq!(a.as_str(), "2.0.0.0/8 2");
        assert_eq!(a, ArgText::from("2.0.0.0/8 2"));
        assert_eq!(format!("{a}|{a:?}"), "2.0.0.0/8 2|\"2.0.0.0/8 2\"");
        assert!(Arc::ptr_eq(&a.clone().buf, &buf), "a clone shares the text");
        assert_eq!(ArgText::default(), "");
        // Out of range: refused at once, as slicing is.
        let b = std::panic::catch_unwind(|| ArgText::shared(&buf, 20..40));
        assert!(b.is_err(), "a range outside the text is refused");
    }
}
