//! Click's `AddressInfo` names, written into the arguments of the other
//! elements before the router is built (see
//! [`bricks_element::addresses`]).

use bricks_config::{Arg, Router, Span};
use bricks_element::addresses::{parse_definition, AddressBook, Reading};
use bricks_element::{Args, PortInfo, Processing};
use std::borrow::Cow;

use crate::Registry;

/// The class whose arguments define names.
pub const CLASS: &str = "AddressInfo";

/// Classes whose arguments are instructions, not addresses: their words
/// are left as written (a `write ar.config "a"` passes `a` to the
/// handler, which reads the name itself; see
/// `Element::handler_addresses`).
const SCRIPTS: [&str; 2] = ["Script", "DriverManager"];

/// `router` with every address name in its elements' arguments replaced
/// by the address it stands for; the router itself when it defines none.
/// Definitions that do not parse are left for `AddressInfo` to report.
pub fn resolve<'r>(router: &'r Router, registry: &Registry) -> Cow<'r, Router> {
    let book = book(router);
    if book.is_empty() {
        return Cow::Borrowed(router);
    }
    let mut out = router.clone();
    for (i, decl) in out.elements.iter_mut().enumerate() {
        if decl.class == CLASS || SCRIPTS.contains(&decl.class.as_str()) {
            continue;
        }
        let mut args = Vec::with_capacity(decl.args.len());
        let mut ambiguous = Vec::new();
        for (k, a) in decl.args.iter().enumerate() {
            let (text, amb) = book.rewrite(&decl.name, &a.text, Reading::Ip);
            if amb {
                ambiguous.push(k);
            }
            args.push(Arg { text, span: a.span });
        }
        if !ambiguous.is_empty() {
            if let Some(class) = registry.get(&decl.class) {
                let ports = ports_of(router, i, class.processing_spec());
                args = choose(&book, &decl.name, &decl.args, args, &ambiguous, |a| {
                    let mut args = Args::new(a, Some(decl.config_span));
                    (class.make)(&mut args, &ports)
                        .and_then(|_| args.complete())
                        .err()
                        .map(|e| e.span)
                });
            }
        }
        decl.args = args;
    }
    Cow::Owned(out)
}

/// The names `router`'s AddressInfo elements define. Definitions that do
/// not parse are left out (`AddressInfo` reports them).
pub fn book(router: &Router) -> AddressBook {
    let mut book = AddressBook::default();
    for decl in router.elements.iter().filter(|d| d.class == CLASS) {
        let prefix = decl.name.rsplit_once('/').map_or("", |(p, _)| p);
        for a in &decl.args {
            if let Ok((name, entry)) = parse_definition(&a.text) {
                book.define(prefix, &name, entry);
            }
        }
    }
    book
}

/// For each argument with a name of several kinds, the reading the element
/// accepts: the first with which it configures, else the first whose
/// error is not in that argument, else the IPv4 address. A lone name may
/// also stand for two arguments, its IPv4 and its Ethernet address
/// (`ARPQuerier(intern)`, as Click's does). `try_make` answers `None` when
/// the element configures, or the span of its error.
fn choose(
    book: &AddressBook,
    element: &str,
    written: &[Arg],
    mut args: Vec<Arg>,
    ambiguous: &[usize],
    try_make: impl Fn(&[Arg]) -> Option<Option<Span>>,
) -> Vec<Arg> {
    // Positions move when a name becomes two arguments.
    let mut shift = 0usize;
    for &k in ambiguous {
        let span = written[k].span;
        let text = &written[k].text;
        let at = k + shift;
        let mut candidates: Vec<Vec<Arg>> = [
            Reading::Ip,
            Reading::IpNet,
            Reading::Eth,
            Reading::IpEth,
            Reading::Ip6,
        ]
        .iter()
        .map(|&r| {
            vec![Arg {
                text: book.rewrite(element, text, r).0,
                span,
            }]
        })
        .collect();
        if let Some(e) = book.lookup(element, text.trim()) {
            if let (Some(ip), Some(eth)) = (e.ip, e.eth) {
                candidates.push(vec![
                    Arg {
                        text: ip.to_string(),
                        span,
                    },
                    Arg {
                        text: eth.to_string(),
                        span,
                    },
                ]);
            }
        }
        candidates.dedup();
        let inside = |s: Span| s.file == span.file && s.start >= span.start && s.end <= span.end;
        let mut fallback = None;
        let mut chosen = None;
        for (c, cand) in candidates.iter().enumerate() {
            let mut trial = args.clone();
            trial.splice(at..at + 1, cand.iter().cloned());
            match try_make(&trial) {
                None => {
                    chosen = Some(c);
                    break;
                }
                Some(Some(s)) if inside(s) => {}
                Some(_) => {
                    fallback.get_or_insert(c);
                }
            }
        }
        let pick = &candidates[chosen.or(fallback).unwrap_or(0)];
        args.splice(at..at + 1, pick.iter().cloned());
        shift += pick.len() - 1;
    }
    args
}

/// The ports element `i` has in `router`, for trying its arguments: as many
/// as its connections use, push where its class allows either.
fn ports_of(router: &Router, i: usize, spec: bricks_element::ProcessingSpec) -> PortInfo {
    let nin = router
        .connections
        .iter()
        .filter(|c| c.to == i)
        .map(|c| c.to_port + 1)
        .max()
        .unwrap_or(0);
    let nout = router
        .connections
        .iter()
        .filter(|c| c.from == i)
        .map(|c| c.from_port + 1)
        .max()
        .unwrap_or(0);
    let push = |p: Processing| match p {
        Processing::Agnostic => Processing::Push,
        x => x,
    };
    PortInfo {
        inputs: (0..nin).map(|p| push(spec.input(p))).collect(),
        outputs: (0..nout).map(|p| push(spec.output(p))).collect(),
    }
}
