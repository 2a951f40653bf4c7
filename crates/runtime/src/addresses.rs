//! Click's `AddressInfo` names, written into the arguments of the other
//! elements before the router is built (see
//! [`bricks_element::addresses`]).

use bricks_config::{Arg, Router, Span};
use bricks_element::addresses::{parse_definition, words, AddressBook, Reading};
use bricks_element::{Args, PortInfo, Processing};
use std::borrow::Cow;

use crate::{host_devices, Registry};

/// The class whose arguments define names.
pub const CLASS: &str = "AddressInfo";

/// Classes whose arguments are instructions, not addresses: their words
/// are left as written (a `write ar.config "a"` passes `a` to the
/// handler, which reads the name itself; see
/// `Element::handler_addresses`).
const SCRIPTS: [&str; 2] = ["Script", "DriverManager"];

/// A network device that an element's argument names for its address
/// and that this host does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbsentDevice {
    /// The element, by index.
    pub element: usize,
    /// The argument that names it.
    pub span: Span,
    /// The device.
    pub device: String,
}

/// `router` with every address name in its elements' arguments replaced
/// by the address it stands for (the router itself when nothing is
/// replaced), and the network devices named for addresses that this host
/// lacks: those are given placeholder addresses ([`host_devices::placeholder`]),
/// which the caller reports. Definitions that do not parse are left for
/// `AddressInfo` to report.
pub fn resolve<'r>(
    router: &'r Router,
    registry: &Registry,
) -> (Cow<'r, Router>, Vec<AbsentDevice>) {
    let mut book = book(router);
    book.set_devices(host_devices::devices());
    let mut out: Option<Router> = None;
    let mut absent = Vec::new();
    for (i, decl) in router.elements.iter().enumerate() {
        if decl.class == CLASS || SCRIPTS.contains(&decl.class.as_str()) {
            continue;
        }
        let Some(class) = registry.get(&decl.class) else {
            let args = rewrite_all(&book, &decl.name, &decl.args).0;
            if let Cow::Owned(args) = args {
                if args[..] != decl.args[..] {
                    out.get_or_insert_with(|| router.clone()).elements[i].args = args.into();
                }
            }
            continue;
        };
        let ports = ports_of(router, i, class.processing_spec());
        // `None` when the element configures, else its error's span.
        let try_make = |a: &[Arg]| {
            let mut args = Args::new(a, Some(decl.config_span));
            (class.make)(&mut args, &ports)
                .and_then(|_| args.complete())
                .err()
                .map(|e| e.span)
        };
        let mut args = resolve_args(&book, &decl.name, &decl.args, &try_make);
        // Names of devices this host lacks: tried only when the element
        // refuses its arguments, in the argument at fault.
        // A device name starts with a lower-case letter
        // (`looks_like_device`): arguments without one (numbers,
        // addresses, routes) are not split into words.
        let missing: Vec<(usize, &str)> = args
            .iter()
            .enumerate()
            .filter(|(_, a)| a.text.bytes().any(|c| c.is_ascii_lowercase()))
            .flat_map(|(k, a)| words(&a.text).map(move |w| (k, w)))
            .filter_map(|(k, w)| {
                let name = host_devices::looks_like_device(w)?;
                book.lookup(&decl.name, name).is_none().then_some((k, name))
            })
            .collect();
        if !missing.is_empty() {
            if let Some(Some(at)) = try_make(&args) {
                let inside = |s: Span| s.file == at.file && s.start <= at.start && at.end <= s.end;
                let mut trial = book.clone();
                let mut named = Vec::new();
                for &(k, name) in &missing {
                    if inside(decl.args[k].span) {
                        trial.add_device(name, host_devices::placeholder());
                        named.push((k, name.to_string()));
                    }
                }
                if !named.is_empty() {
                    let retry = resolve_args(&trial, &decl.name, &decl.args, &try_make);
                    if try_make(&retry).is_none() {
                        args = retry;
                        named.dedup();
                        absent.extend(named.into_iter().map(|(k, device)| AbsentDevice {
                            element: i,
                            span: decl.args[k].span,
                            device,
                        }));
                    }
                }
            }
        }
        if let Cow::Owned(args) = args {
            if args[..] != decl.args[..] {
                out.get_or_insert_with(|| router.clone()).elements[i].args = args.into();
            }
        }
    }
    let router = match out {
        Some(r) => Cow::Owned(r),
        None => Cow::Borrowed(router),
    };
    (router, absent)
}

/// One element's arguments with the names in them replaced; `try_make`
/// as in [`choose`]. Borrowed when no argument names anything.
fn resolve_args<'w>(
    book: &AddressBook,
    element: &str,
    written: &'w [Arg],
    try_make: &dyn Fn(&[Arg]) -> Option<Option<Span>>,
) -> Cow<'w, [Arg]> {
    let (args, ambiguous) = rewrite_all(book, element, written);
    if ambiguous.is_empty() {
        return args;
    }
    Cow::Owned(choose(
        book,
        element,
        written,
        args.into_owned(),
        &ambiguous,
        try_make,
    ))
}

/// `written` with each argument's names read as IPv4 addresses (borrowed
/// when none is: an element's arguments are copied only when a name is in
/// them, and a route table inline has a million), and the positions of
/// the arguments with a name of several kinds.
fn rewrite_all<'w>(
    book: &AddressBook,
    element: &str,
    written: &'w [Arg],
) -> (Cow<'w, [Arg]>, Vec<usize>) {
    let mut args: Option<Vec<Arg>> = None;
    let mut ambiguous = Vec::new();
    for (k, a) in written.iter().enumerate() {
        let (text, amb) = book.rewrite(element, &a.text, Reading::Ip);
        if amb {
            ambiguous.push(k);
        }
        match (text, &mut args) {
            (Cow::Owned(text), args) => {
                args.get_or_insert_with(|| written[..k].to_vec()).push(Arg {
                    text: text.into(),
                    span: a.span,
                });
            }
            (Cow::Borrowed(_), Some(args)) => args.push(a.clone()),
            (Cow::Borrowed(_), None) => {}
        }
    }
    let args = match args {
        Some(a) => Cow::Owned(a),
        None => Cow::Borrowed(written),
    };
    (args, ambiguous)
}

/// The names `router`'s AddressInfo elements define. Definitions that do
/// not parse are left out (`AddressInfo` reports them).
pub fn book(router: &Router) -> AddressBook {
    let mut book = AddressBook::default();
    for decl in router.elements.iter().filter(|d| d.class == CLASS) {
        let prefix = decl.name.rsplit_once('/').map_or("", |(p, _)| p);
        for a in decl.args.iter() {
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
        // A device name is first tried as written (`FromDevice(eth0)`).
        let as_written = words(text).any(|w| book.is_device(element, w));
        let mut candidates: Vec<Vec<Arg>> = as_written
            .then(|| vec![written[k].clone()])
            .into_iter()
            .chain(
                [
                    Reading::Ip,
                    Reading::IpNet,
                    Reading::Eth,
                    Reading::IpEth,
                    Reading::Ip6,
                ]
                .iter()
                .map(|&r| {
                    vec![Arg {
                        text: book.rewrite(element, text, r).0.into_owned().into(),
                        span,
                    }]
                }),
            )
            .collect();
        if let Some(e) = book.lookup(element, text.trim()) {
            if let (Some(ip), Some(eth)) = (e.ip, e.eth) {
                candidates.push(vec![
                    Arg {
                        text: ip.to_string().into(),
                        span,
                    },
                    Arg {
                        text: eth.to_string().into(),
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
                // A device name as written, refused for another reason
                // than this argument (`ToDevice(eth0, BACKEND packet)`
                // where another element gave eth0 another backend): the
                // name is right, and that error is the one to report, not
                // hidden by an address reading that happens to configure.
                Some(s) if as_written && c == 0 && !s.is_some_and(inside) => {
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
