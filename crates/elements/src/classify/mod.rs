//! Elements of the `classify` group: Classifier (patterns of packet bytes)
//! and IPClassifier (tcpdump-like patterns of IP header fields).
//!
//! Both compile their patterns once into a [`program::Program`], a decision
//! DAG of masked word comparisons in the manner of Click's
//! `Classification::Wordwise` (Kohler et al., "The Click Modular Router",
//! TOCS 2000, §4.2 on classifier compilation), and classify each packet of
//! a batch with a handful of loads and compares.

pub mod classifier;
pub mod ip_classifier;
pub mod ip_filter;
pub mod program;

use bricks_config::Span;
use bricks_element::{ArgError, Args, ElementClass, PortInfo};
use std::ops::Range;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[&classifier::CLASS, &ip_classifier::CLASS];

/// A pattern that does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// Which pattern, from 0.
    pub pattern: usize,
    /// The bytes of the pattern text at fault.
    pub at: Range<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when there is something useful to say.
    pub help: Option<String>,
}

impl PatternError {
    pub(crate) fn new(at: Range<usize>, message: impl Into<String>) -> PatternError {
        PatternError {
            pattern: 0,
            at,
            message: message.into(),
            help: None,
        }
    }

    pub(crate) fn help(mut self, help: impl Into<String>) -> PatternError {
        self.help = Some(help.into());
        self
    }
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pattern {}: {}", self.pattern, self.message)
    }
}

impl std::error::Error for PatternError {}

/// The pattern arguments of a classifier element: every positional
/// argument, less empty ones at the end (`Classifier()`, a trailing comma),
/// which Click's argument splitting drops too.
pub(crate) fn read_patterns<'a>(args: &mut Args<'a>) -> Vec<(&'a str, Span)> {
    let mut patterns = args.rest();
    while patterns.last().is_some_and(|(t, _)| t.trim().is_empty()) {
        patterns.pop();
    }
    patterns
}

/// Click's check that a classifier has one pattern per output.
pub(crate) fn check_outputs(
    class: &str,
    patterns: &[(&str, Span)],
    ports: &PortInfo,
) -> Result<(), ArgError> {
    let (np, no) = (patterns.len(), ports.noutputs());
    if np > no {
        let plural = if no == 1 { "" } else { "s" };
        return Err(ArgError::at(
            patterns[no].1,
            format!("{class} has {np} patterns but {no} output{plural}: pattern {no} has no output"),
        )
        .with_help(format!(
            "connect output {no} (`name[{no}] -> ...`) or remove the pattern: {class} needs one pattern per output port"
        )));
    }
    if np < no {
        let plural = if np == 1 { "" } else { "s" };
        return Err(
            ArgError::new(format!("{class} has {np} pattern{plural} but {no} outputs")).with_help(
                format!("{class} needs one pattern per output port; `-` matches every packet"),
            ),
        );
    }
    Ok(())
}

/// Turns a pattern error into an argument error located at the offending
/// text: the token itself when the argument text is the source text, the
/// whole argument otherwise (comments or variables changed it).
pub(crate) fn locate(e: PatternError, patterns: &[(&str, Span)]) -> ArgError {
    let msg = e.to_string();
    let err = match patterns.get(e.pattern) {
        Some(&(text, span)) => {
            let sub = if span.len() == text.len() && e.at.end <= text.len() {
                Span::new(span.file, span.start + e.at.start, span.start + e.at.end)
            } else {
                span
            };
            ArgError::at(sub, msg)
        }
        None => ArgError::new(msg),
    };
    match e.help {
        Some(h) => err.with_help(h),
        None => err,
    }
}
