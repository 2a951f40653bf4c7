//! `RoundRobinIPMapper`: a mapper element giving a rewriter's new flows
//! its patterns in turn (Click's `RoundRobinIPMapper`,
//! `elements/ip/rripmapper.cc`).

use super::iprwpatterns::{self, PatternSet};
use super::pattern::{Mapper, Pattern};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};
use std::sync::Arc;

/// The `RoundRobinIPMapper` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RoundRobinIPMapper",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Most patterns one mapper holds.
pub const MAX_CHOICES: usize = 4096;

static MANUAL: Manual = Manual {
    summary: "gives a rewriter's new flows its patterns in turn",
    synopsis: "RoundRobinIPMapper(PATTERN1 FOUTPUT1 ROUTPUT1, ...)",
    description: "An information element (no ports) that a rewriter's input spec names \
        (Click's IPMapper): each new flow on that input is rewritten by the next pattern in \
        turn, leaves by its FOUTPUT, and its replies by its ROUTPUT. A pattern that has no \
        free port or address for the flow is skipped for the next one; the flow is dropped \
        when none has. A PATTERN is as in IPRewriter's `pattern` input spec, or the name of \
        an IPRewriterPatterns pattern. The outputs are checked against each rewriter that \
        names the mapper. Rewriters naming one mapper share its turn. At most 4096 patterns.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "r :: RoundRobinIPMapper(1.0.0.1 - - - 0 1, 1.0.0.2 - - - 0 1);\n\
        InfiniteSource(DATA \\<68 69>, LIMIT 1) -> UDPIPEncap(10.0.0.1, 1234, 10.0.0.2, 53)\n\
        -> rw :: IPRewriter(r, drop) -> Discard;\n\
        Idle -> [1]rw[1] -> Discard;",
    see_also: &["IPRewriter", "IPRewriterPatterns"],
};

#[derive(Debug)]
struct RoundRobinIPMapper;

impl Element for RoundRobinIPMapper {}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rest = args.rest();
    if rest.len() > MAX_CHOICES {
        return Err(ArgError::new(format!("more than {MAX_CHOICES} patterns")));
    }
    let sets = std::cell::OnceCell::new();
    let named = |name: &str| -> Option<Arc<Pattern>> {
        let sets: &Vec<Arc<PatternSet>> = sets.get_or_init(|| {
            args.shared_in_scope::<PatternSet>(iprwpatterns::CLASS.name)
                .unwrap_or_default()
        });
        sets.iter().find_map(|s| s.get(name))
    };
    let m = Mapper::parse("RoundRobinIPMapper", rest.iter().map(|(t, _)| *t), &named)
        .map_err(ArgError::new)?;
    args.shared(|_| Ok(m))?;
    Ok(Box::new(RoundRobinIPMapper))
}
