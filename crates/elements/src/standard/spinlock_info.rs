//! `SpinlockInfo`: names the spinlocks that Click's `SpinlockAcquire`
//! and `SpinlockRelease` take and give back
//! (`elements/threads/spinlockinfo.cc`).
//!
//! bricks checks the names and keeps them, and has no SpinlockAcquire or
//! SpinlockRelease: a lock taken by one element and given back by another
//! is held across the elements between them, and a packet dropped or
//! sent another way there (a Classifier branch, a full Queue) never gives
//! it back, so every worker that next takes it spins forever. bricks'
//! workers share state through lock-free queues (ThreadSafeQueue) and
//! elements' own shared tables instead.

use bricks_element::{ArgError, Args, Element, ElementClass, FromArg, Handler, Manual, PortInfo};

/// The `SpinlockInfo` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SpinlockInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "specifies names of spinlocks",
    synopsis: "SpinlockInfo(NAME, ...)",
    description: "Declares spinlock names, one a argument, for Click's SpinlockAcquire and \
        SpinlockRelease. Each NAME is one word (quotes allowed); anything else is refused \
        with Click's `bad NAME`. A name given twice is one lock, as in Click. bricks does \
        not have SpinlockAcquire and SpinlockRelease: a lock held from one element to \
        another deadlocks a worker as soon as a packet between them is dropped or turned \
        aside; use ThreadSafeQueue to move packets between workers. The `names` read \
        handler lists the names, one a line.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "SpinlockInfo(rx_lock, tx_lock); InfiniteSource(LIMIT 1) -> Discard;",
    see_also: &["ThreadSafeQueue"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut names: Vec<String> = Vec::new();
    for (text, span) in args.rest() {
        let name = parse_name(text).ok_or_else(|| ArgError::at(span, "bad NAME"))?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(Box::new(SpinlockInfo { names }))
}

/// Click's `cp_string`: one word, quotes removed.
fn parse_name(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let quoted = text.starts_with('"') || text.starts_with('\'');
    if !quoted && text.chars().any(char::is_whitespace) {
        return None;
    }
    let name = String::from_arg(text).ok()?;
    if quoted && text.len() < 2 {
        return None;
    }
    Some(name)
}

/// The declared names.
#[derive(Debug)]
pub struct SpinlockInfo {
    names: Vec<String>,
}

impl Element for SpinlockInfo {
    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "names").then(|| self.names.iter().map(|n| format!("{n}\n")).collect())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("names")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    fn none() -> PortInfo {
        PortInfo {
            inputs: vec![],
            outputs: vec![],
        }
    }

    #[test]
    fn names_are_checked_and_kept() {
        let h = Harness::new(&CLASS, "a, \"b\", a, c_1", none());
        assert_eq!(h.read_handler("names").unwrap(), "a\nb\nc_1\n");
        let h = Harness::new(&CLASS, "", none());
        assert_eq!(h.read_handler("names").unwrap(), "");
        for bad in ["two words", "a, , b"] {
            let e = make_element(&CLASS, bad, &none()).err().unwrap();
            assert!(e.contains("bad NAME"), "{bad}: {e}");
        }
    }
}
