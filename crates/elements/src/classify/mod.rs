//! Elements of the `classify` group: Classifier (patterns of packet bytes)
//! and IPClassifier (tcpdump-like patterns of IP header fields).
//!
//! Both compile their patterns once into a [`program::Program`], a decision
//! DAG of masked word comparisons in the manner of Click's
//! `Classification::Wordwise` (Kohler et al., "The Click Modular Router",
//! ACM TOCS 18(3), 2000, which describes the Classifier's decision tree and
//! its optimisation), and classify each packet of a batch with a handful of
//! loads and compares.

pub mod classifier;
pub mod click_program;
pub mod ip_classifier;
pub mod ip_filter;
pub mod program;

use bricks_config::Span;
use bricks_element::{ArgError, Args, ElementClass, Packet, PortInfo};
use std::ops::Range;

/// Length of the Ethernet header IPFilter's `ether` primitives read.
const ETHER_HEADER_LEN: usize = 14;

/// The headers IPClassifier and IPFilter read of a packet: the IP header
/// where the network header annotation says (the start of the data
/// without one) and, if `link`, the Ethernet header in front of it.
///
/// Click reads its MAC header annotation. bricks keeps no such annotation
/// (see MarkMACHeader), so the Ethernet header is the 14 bytes that end
/// where the IP header starts, when they are this packet's own: in the
/// frame (`CheckIPHeader(14)`), or removed from its front since it was
/// made (`Strip(14)` leaves them in the buffer, as Click's annotation
/// still points at them). A packet made as an IP packet has nothing of its
/// own there, and its `ether` tests are false; Click would read through
/// an unset annotation.
#[inline]
pub(crate) fn ip_headers(p: &Packet, link: bool) -> program::IpHeaders<'_> {
    let head = p.head_offset();
    let l3 = p.anno().l3_offset().map_or(head, usize::from);
    let ip = p.bytes_from(l3);
    if !link {
        return program::IpHeaders::new(ip);
    }
    // Bytes from HEADROOM on were written for this packet when it was
    // made; below it only what was pushed on its front.
    let own_from = head.min(bricks_packet::HEADROOM);
    let eth = match l3.checked_sub(ETHER_HEADER_LEN) {
        Some(e) if e >= own_from => {
            let b = p.bytes_from(e);
            &b[..b.len().min(ETHER_HEADER_LEN)]
        }
        _ => &[],
    };
    program::IpHeaders::with_link(eth, ip)
}

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

#[cfg(test)]
mod tests {
    use super::CLASSES;
    use bricks_config::{Source, SourceMap};
    use bricks_runtime::{build, Engine, RunSummary};

    /// Builds and runs `config`, or renders its diagnostics.
    fn run(config: &str) -> Result<RunSummary, String> {
        let mut map = SourceMap::default();
        let source = Source {
            name: "<test>".into(),
            text: config.to_string(),
        };
        let router = bricks_config::parse(&mut map, source).map_err(|d| map.render_all(&d))?;
        let plan = build(&router, &crate::registry()).map_err(|d| map.render_all(&d))?;
        let mut engine = Engine::new(&plan).map_err(|e| e.to_string())?;
        engine.idle_sleep = false;
        let summary = engine.run();
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
        Ok(summary)
    }

    #[test]
    fn manual_examples_run() {
        for class in CLASSES {
            let m = class.manual;
            assert!(m.example.contains(class.name), "{}", class.name);
            let s = run(m.example).unwrap_or_else(|e| panic!("{}: {e}", class.name));
            for e in &s.elements {
                for (name, v) in e.stats.entries() {
                    let bad = name == "drops" || name == "unconnected_drops";
                    assert!(!bad || *v == 0, "{}: {}.{name} = {v}", class.name, e.name);
                }
            }
        }
    }

    #[test]
    fn a_bad_pattern_is_underlined_in_the_configuration() {
        let config = "InfiniteSource(LIMIT 1) -> c :: IPClassifier(tcp, udp dst port bogus);\n\
                      c[0] -> Discard; c[1] -> Discard;";
        let e = run(config).err().unwrap();
        assert!(
            e.contains(
                "pattern 1: expected a port number, name or range after `port`, found `bogus`"
            ),
            "{e}"
        );
        let line = e.lines().find(|l| l.contains("^")).unwrap();
        assert_eq!(line.matches('^').count(), "bogus".len(), "{e}");
        let e = run(
            "InfiniteSource(LIMIT 1) -> c :: Classifier(12/0800, 12/08x0, -); c[0] -> Discard;",
        )
        .err()
        .unwrap();
        assert!(e.contains("Classifier has 3 patterns but 1 output"), "{e}");
    }
}
