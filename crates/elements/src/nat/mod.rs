//! Address translation: Click's rewriters (NAT and NAPT, RFC 3022).
//!
//! One engine ([`rewriter`]) serves every class: it parses input
//! specifications and patterns ([`pattern`]), keeps mappings in a flow set
//! shared by all workers ([`table`], which documents the locking and the
//! expiry), and rewrites packets in place with incremental checksums
//! ([`flow`]).

pub mod flow;
pub mod ftpportmapper;
pub mod icmppingrewriter;
pub mod icmprewriter;
pub mod ipaddrpairrewriter;
pub mod ipaddrrewriter;
pub mod iprewriter;
pub mod iprwpatterns;
pub mod pattern;
pub mod rewriter;
pub mod rripmapper;
pub mod seq;
pub mod siphmapper;
pub mod table;
pub mod tcprewriter;
pub mod udprewriter;

use bricks_element::ElementClass;

/// The address translation classes.
pub static CLASSES: &[&ElementClass] = &[
    &iprewriter::CLASS,
    &tcprewriter::CLASS,
    &udprewriter::CLASS,
    &ipaddrrewriter::CLASS,
    &ipaddrpairrewriter::CLASS,
    &icmppingrewriter::CLASS,
    &icmprewriter::CLASS,
    &iprwpatterns::CLASS,
    &rripmapper::CLASS,
    &siphmapper::CLASS,
    &ftpportmapper::CLASS,
];

#[cfg(test)]
mod tests {
    use super::CLASSES;
    use bricks_config::{Source, SourceMap};

    #[test]
    fn classes_declare_valid_ports_and_manuals() {
        for c in CLASSES {
            let _ = c.port_count();
            let _ = c.processing_spec();
            let m = c.manual;
            assert!(!m.summary.is_empty() && !m.description.is_empty());
            assert!(m.synopsis.contains(c.name), "{}", c.name);
            assert!(m.example.contains(c.name), "{}", c.name);
        }
    }

    /// Every manual's example runs, and a rewriter's makes one mapping.
    #[test]
    fn manual_examples_run() {
        let registry = crate::registry();
        for c in CLASSES {
            let mut map = SourceMap::default();
            let router = bricks_config::parse(
                &mut map,
                Source {
                    name: format!("{} example", c.name),
                    text: c.manual.example.to_string(),
                },
            )
            .unwrap_or_else(|d| panic!("{}: {}", c.name, map.render(&d[0])));
            let plan = bricks_runtime::build(&router, &registry)
                .unwrap_or_else(|d| panic!("{}: {}", c.name, map.render(&d[0])));
            let mut engine = bricks_runtime::Engine::new(&plan).unwrap();
            engine.idle_sleep = false;
            let summary = engine.run();
            assert!(
                summary.errors.is_empty(),
                "{}: {:?}",
                c.name,
                summary.errors
            );
            let stats = summary
                .elements
                .iter()
                // IPRewriterPatterns' example: the rewriter naming it.
                .find(|e| {
                    e.class == c.name
                        || (matches!(
                            c.name,
                            "IPRewriterPatterns" | "RoundRobinIPMapper" | "SourceIPHashMapper"
                        ) && e.class == "IPRewriter")
                        || (c.name == "FTPPortMapper" && e.class == "TCPRewriter")
                })
                .unwrap_or_else(|| panic!("{}: no counters reported", c.name));
            // ICMPRewriter's example has no error to rewrite; it runs.
            let key = if c.name == "ICMPRewriter" {
                "unmapped"
            } else {
                "created"
            };
            let want = if c.name == "ICMPRewriter" { 0 } else { 1 };
            assert_eq!(
                stats.stats.get(key),
                Some(want),
                "{}: {:?}",
                c.name,
                stats.stats
            );
        }
    }
}
