//! `IPRewriterPatterns`: named rewriting patterns (Click's
//! `IPRewriterPatterns`, `elements/ip/iprwpatterns.cc`).
//!
//! Each argument is `NAME PATTERN`; a rewriter's input spec `pattern NAME
//! FOUTPUT ROUTPUT` uses the pattern. Every rewriter naming a pattern
//! uses the same object, as in Click, so a sequential range (`L-H#`)
//! continues where another rewriter's last allocation left it, and a
//! port one rewriter has mapped is skipped by the other when both share
//! a flow set (MAPPING_CAPACITY naming the other).

use super::pattern::Pattern;
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};
use std::sync::Arc;

/// The `IPRewriterPatterns` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPRewriterPatterns",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Most patterns one element defines: a configuration is text a user
/// wrote, but the bound keeps a hostile one from growing without limit.
pub const MAX_PATTERNS: usize = 4096;

static MANUAL: Manual = Manual {
    summary: "defines named patterns for the rewriters",
    synopsis: "IPRewriterPatterns(NAME PATTERN, ...)",
    description: "An information element (no ports). Each argument defines the pattern NAME, \
        `SADDR SPORT DADDR DPORT` (or `SADDR DADDR` for IPAddrRewriter and IPAddrPairRewriter) \
        as in an IPRewriter input spec, which any rewriter's input spec may then use as \
        `pattern NAME FOUTPUT ROUTPUT`. A name is visible to the rewriters of the compound \
        element that holds the IPRewriterPatterns and of the compounds inside it; an inner \
        definition hides an outer one. The rewriters naming a pattern share it, as Click's \
        shared IPRewriterPattern objects: a sequential range (`L-H#`) allocates from where the \
        last allocation by any of them left off. A pattern may be a single word naming a \
        pattern defined earlier in the same element. Defining a name twice in one element is \
        an error. At most 4096 patterns per element.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "IPRewriterPatterns(to_world 1.0.0.1 1024-65535# - -);\n\
        InfiniteSource(DATA \\<68 69>, LIMIT 1) -> UDPIPEncap(10.0.0.1, 1234, 10.0.0.2, 53)\n\
        -> rw :: IPRewriter(pattern to_world 0 1, drop) -> Discard;\n\
        Idle -> [1]rw[1] -> Discard;",
    see_also: &["IPRewriter", "TCPRewriter", "UDPRewriter", "IPAddrRewriter"],
};

/// The patterns one element defines, in order.
#[derive(Debug, Default)]
pub struct PatternSet {
    patterns: Vec<(String, Arc<Pattern>)>,
}

impl PatternSet {
    /// The pattern called `name`, if this element defines it.
    pub fn get(&self, name: &str) -> Option<Arc<Pattern>> {
        self.patterns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| Arc::clone(p))
    }

    /// Parses the definitions (`NAME WORDS...` each). Errors are Click's.
    pub fn parse<'a>(defs: impl IntoIterator<Item = &'a str>) -> Result<PatternSet, String> {
        let mut set = PatternSet::default();
        for def in defs {
            set.define(def)?;
        }
        Ok(set)
    }

    /// Adds one definition, `NAME WORDS...` (nothing when empty).
    fn define(&mut self, def: &str) -> Result<(), String> {
        let words: Vec<&str> = def.split_whitespace().collect();
        let Some((&name, rest)) = words.split_first() else {
            return Ok(());
        };
        if self.get(name).is_some() {
            return Err(format!("pattern `{name}` already defined"));
        }
        if self.patterns.len() >= MAX_PATTERNS {
            return Err(format!("more than {MAX_PATTERNS} patterns"));
        }
        let p = match rest {
            [other] => self
                .get(other)
                .ok_or_else(|| format!("no such pattern `{other}`"))?,
            _ => Arc::new(Pattern::parse(rest).map_err(|why| format!("{name}: {why}"))?),
        };
        self.patterns.push((name.to_string(), p));
        Ok(())
    }
}

#[derive(Debug)]
struct Patterns;

impl Element for Patterns {}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rest = args.rest();
    let mut set = PatternSet::default();
    for (text, span) in &rest {
        set.define(text).map_err(|why| ArgError::at(*span, why))?;
    }
    args.shared(|_| Ok(set))?;
    Ok(Box::new(Patterns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_parsed_and_checked() {
        let s = PatternSet::parse(["a 1.0.0.1 1024-1030# - -", "b a", "", "c 2.0.0.1 -"]).unwrap();
        assert!(Arc::ptr_eq(&s.get("a").unwrap(), &s.get("b").unwrap()));
        assert_eq!(s.get("c").unwrap().unparse(), "2.0.0.1 -");
        assert!(s.get("d").is_none());
        assert_eq!(
            PatternSet::parse(["a 1.0.0.1 - - -", "a 2.0.0.1 - - -"]).unwrap_err(),
            "pattern `a` already defined"
        );
        assert_eq!(
            PatternSet::parse(["a 1.0.0.1 x - -"]).unwrap_err(),
            "a: bad source port"
        );
        assert_eq!(
            PatternSet::parse(["a zz"]).unwrap_err(),
            "no such pattern `zz`"
        );
    }
}
