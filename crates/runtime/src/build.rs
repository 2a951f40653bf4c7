//! From a parsed configuration to a checked plan, and from a plan to a
//! runnable graph.
//!
//! Checks, in the order a user meets them: every class exists; port
//! numbers fit each class's port count and no port below the highest used
//! one is left unconnected; push and pull are resolved (agnostic ports take
//! the processing of what they connect to, Click's rule) and a push output
//! never meets a pull input or the reverse; a push output and a pull input
//! have exactly one connection; there is no pull cycle; every element
//! accepts its arguments. Errors are collected, not just the first: the
//! arguments of every element whose class is known and whose ports fit are
//! checked even when other elements' classes are unknown.

use crate::placement::{Placement, Subject};
use crate::Registry;
use bricks_config::{Arg, Diagnostic, Router, Span};
use bricks_element::{
    Args, Edge, Element, ElementClass, ElementMeta, ElementRefs, Graph, PortInfo, Processing,
    ProcessingSpec, SharedSlot, TaskKind, MAX_PULL_DEPTH,
};
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// One element of a checked plan.
#[derive(Debug, Clone)]
pub struct PlanElement {
    /// Its name (`Class@N` for an anonymous element).
    pub name: String,
    /// Its class.
    pub class: ElementClass,
    /// Its arguments as written.
    pub args: std::sync::Arc<[Arg]>,
    /// Where its arguments are, for errors.
    pub config_span: Span,
    /// Its ports, resolved.
    pub ports: PortInfo,
    /// Where each output leads: every (element, port) it connects to.
    pub outputs: Vec<Vec<(usize, usize)>>,
    /// Where each input comes from.
    pub inputs: Vec<Vec<(usize, usize)>>,
    /// Its task, if it has one.
    pub task: TaskKind,
    /// Whether its task (a source) runs on every worker by itself: a
    /// device receiver reading the queues each worker owns.
    pub every_worker: bool,
    /// Its task's tickets: its share of a worker against the worker's
    /// other tasks (`ScheduleInfo`; [`crate::DEFAULT_TICKETS`] otherwise).
    pub tickets: u32,
    /// Which workers run its task (`StaticThreadSched`).
    pub placement: Placement,
    /// State its instances share (made when the plan was checked).
    pub shared: Arc<SharedSlot>,
}

/// A checked configuration, ready to be instantiated once per worker.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The elements in declaration order.
    pub elements: Vec<PlanElement>,
    /// The options it was built with; its instances are made with them.
    pub options: BuildOptions,
    /// The router's `config` and `flatconfig` read handlers: the text as
    /// given (the flattened one under `require(compact_config)`, as in
    /// Click) and the flattened configuration.
    pub texts: RouterTexts,
    /// The messages elements gave when they were configured
    /// ([`Element::configure_message`]): the element's index and the text,
    /// in declaration order.
    pub messages: Vec<(usize, String)>,
    /// The AddressInfo names, for handler values; `None` when the
    /// configuration defines none.
    pub addresses: Option<Arc<bricks_element::addresses::AddressBook>>,
}

/// What the router's own read handlers say of the configuration
/// (`config`, `flatconfig`, `requirements`), made when they are read: a
/// configuration with a million routes inline would otherwise carry two
/// more copies of its text in every plan and every worker. Clones share
/// one flattened text.
#[derive(Debug, Clone, Default)]
pub struct RouterTexts(Arc<TextsOf>);

#[derive(Debug, Default)]
struct TextsOf {
    /// The parsed configuration; its text and every element's arguments
    /// are shared with the plan's, not copied.
    router: Router,
    flat: std::sync::OnceLock<String>,
}

impl RouterTexts {
    /// The texts of a parsed configuration.
    pub fn of(router: &Router) -> RouterTexts {
        RouterTexts(Arc::new(TextsOf {
            router: router.clone(),
            flat: std::sync::OnceLock::new(),
        }))
    }

    /// The flattened configuration (the `flatconfig` handler).
    pub fn flatconfig(&self) -> &str {
        self.0
            .flat
            .get_or_init(|| bricks_config::flatten(&self.0.router))
    }

    /// The configuration as given, or the flattened one under
    /// `require(compact_config)`, as in Click (the `config` handler).
    pub fn config(&self) -> &str {
        let compact = self
            .0
            .router
            .requirements
            .iter()
            .any(|r| r.trim() == "compact_config");
        if compact {
            self.flatconfig()
        } else {
            &self.0.router.text
        }
    }

    /// The `require` statements' arguments, one per line (the
    /// `requirements` handler).
    pub fn requirements(&self) -> String {
        self.0
            .router
            .requirements
            .iter()
            .map(|r| format!("{r}\n"))
            .collect()
    }

    /// The text of router handler `handler`, if it is one of these.
    pub fn get(&self, handler: &str) -> Option<String> {
        match handler {
            "config" => Some(self.config().to_string()),
            "flatconfig" => Some(self.flatconfig().to_string()),
            "requirements" => Some(self.requirements()),
            _ => None,
        }
    }
}

/// What a whole build gives every element, beyond its own arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// The default of every element's `MEMREFS` keyword
    /// ([`bricks_element::Args::memrefs`]): whether the elements that can
    /// count memory references do so unless told otherwise (`bricks run
    /// --memrefs`).
    pub memrefs: bool,
    /// Whether the configuration is only checked (`bricks check`), not
    /// run: a network device named for its address that this host lacks
    /// is then a warning (the address is looked up where the router
    /// runs), not an error.
    pub offline: bool,
}

fn diag(span: Span, message: impl Into<String>) -> Diagnostic {
    Diagnostic {
        span,
        message: message.into(),
        help: None,
        notes: Vec::new(),
    }
}

fn with_help(mut d: Diagnostic, help: impl Into<String>) -> Diagnostic {
    d.help = Some(help.into());
    d
}

/// Union-find over the agnostic port groups of elements, each group
/// possibly fixed to push or pull.
struct Resolver {
    parent: Vec<usize>,
    value: Vec<Option<Processing>>,
}

impl Resolver {
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
}

/// What one side of a connection is, for resolution: fixed or the group
/// of an element's agnostic ports.
#[derive(Clone, Copy)]
enum Side {
    Fixed(Processing),
    Group(usize),
}

/// Checks `router` against `registry` and builds a plan, with the
/// default [`BuildOptions`].
pub fn build(router: &Router, registry: &Registry) -> Result<Plan, Vec<Diagnostic>> {
    build_with(router, registry, BuildOptions::default())
}

/// Checks `router` against `registry` and builds a plan whose elements
/// are made with `options`.
pub fn build_with(
    router: &Router,
    registry: &Registry,
    options: BuildOptions,
) -> Result<Plan, Vec<Diagnostic>> {
    build_beside(router, registry, options, None)
}

/// Checks `router` and builds a plan to replace the running plan `old`
/// (a hot swap): an element with the same name, class and arguments as
/// one of `old`'s shares its state (see [`bricks_element::Args::shared`])
/// with it, the very same tables, instead of making its own. Other
/// elements make theirs afresh, and take what they can from the old
/// element of their name and class when the workers switch over
/// ([`bricks_element::Element::take_state`]).
pub fn build_hotswap(
    router: &Router,
    registry: &Registry,
    options: BuildOptions,
    old: &Plan,
) -> Result<Plan, Vec<Diagnostic>> {
    build_beside(router, registry, options, Some(old))
}

/// The slot of shared state an element of the new plan starts with: the
/// old plan's, when an element there has the same name, class and
/// arguments.
fn carried_slot(
    old: Option<(&Plan, &HashMap<&str, usize>)>,
    name: &str,
    class: &str,
    args: &[Arg],
) -> Arc<SharedSlot> {
    old.and_then(|(p, index)| index.get(name).map(|&i| &p.elements[i]))
        .filter(|e| {
            e.class.name == class
                && e.args.len() == args.len()
                && e.args.iter().zip(args).all(|(a, b)| a.text == b.text)
        })
        .map(|e| Arc::clone(&e.shared))
        .unwrap_or_else(|| Arc::new(SharedSlot::new()))
}

fn build_beside(
    router: &Router,
    registry: &Registry,
    options: BuildOptions,
    old: Option<&Plan>,
) -> Result<Plan, Vec<Diagnostic>> {
    let (resolved, absent) = crate::addresses::resolve(router, registry);
    let router: &Router = &resolved;
    let mut errors = Vec::new();
    let mut absent_warnings = Vec::new();
    for a in absent {
        let decl = &router.elements[a.element];
        if options.offline {
            absent_warnings.push((
                a.element,
                format!(
                    "warning: {}: no network device `{}` on this host; its address is looked \
                     up when the router runs, and the run fails if the device is missing there",
                    decl.name, a.device
                ),
            ));
        } else {
            let mut d = diag(
                a.span,
                format!(
                    "no network device `{}` on this host, whose address this argument names",
                    a.device
                ),
            );
            d.message = configure_message(&decl.name, &decl.class, &d.message);
            d.help = Some(format!(
                "create the device, or define `{}` with AddressInfo",
                a.device
            ));
            errors.push(d);
        }
    }
    let n = router.elements.len();

    // Classes.
    let mut classes: Vec<Option<ElementClass>> = Vec::with_capacity(n);
    for decl in &router.elements {
        match registry.get(&decl.class) {
            Some(c) => classes.push(Some(*c)),
            None => {
                errors.push(unknown_class(decl, registry));
                classes.push(None);
            }
        }
    }

    // Port counts from the connections.
    let mut outputs: Vec<Vec<Vec<(usize, usize)>>> = vec![Vec::new(); n];
    let mut inputs: Vec<Vec<Vec<(usize, usize)>>> = vec![Vec::new(); n];
    let mut out_spans: Vec<Vec<Vec<Span>>> = vec![Vec::new(); n];
    let mut in_spans: Vec<Vec<Vec<Span>>> = vec![Vec::new(); n];
    for c in &router.connections {
        if outputs[c.from].len() <= c.from_port {
            outputs[c.from].resize(c.from_port + 1, Vec::new());
            out_spans[c.from].resize(c.from_port + 1, Vec::new());
        }
        outputs[c.from][c.from_port].push((c.to, c.to_port));
        out_spans[c.from][c.from_port].push(c.span);
        if inputs[c.to].len() <= c.to_port {
            inputs[c.to].resize(c.to_port + 1, Vec::new());
            in_spans[c.to].resize(c.to_port + 1, Vec::new());
        }
        inputs[c.to][c.to_port].push((c.from, c.from_port));
        in_spans[c.to][c.to_port].push(c.span);
    }
    // Elements whose ports do not fit their class: their arguments are not
    // checked (an element reads its port count with them).
    let mut bad_ports = vec![false; n];
    for (i, decl) in router.elements.iter().enumerate() {
        let Some(class) = classes[i] else { continue };
        let pc = class.port_count();
        for (side, ports, spans, range) in [
            ("input", &mut inputs[i], &in_spans[i], pc.inputs),
            ("output", &mut outputs[i], &out_spans[i], pc.outputs),
        ] {
            if ports.len() > range.max {
                let port = ports.len() - 1;
                let span = spans[port].first().copied().unwrap_or(decl.name_span);
                errors.push(with_help(
                    diag(
                        span,
                        format!(
                            "{side} port {port} out of range: `{}` ({}) has {} {side}{}",
                            decl.name,
                            decl.class,
                            range,
                            if range.max == 1 { "" } else { "s" }
                        ),
                    ),
                    format!("see `bricks elements {}`", decl.class),
                ));
                bad_ports[i] = true;
                continue;
            }
            if ports.len() < range.min {
                ports.resize(range.min, Vec::new());
            }
            for (port, conns) in ports.iter().enumerate() {
                if conns.is_empty() {
                    // Click's wording (`Router::check_hookup_completeness`).
                    errors.push(with_help(
                        diag(
                            decl.name_span,
                            format!("`{} :: {}` {side} {port} unused", decl.name, decl.class),
                        ),
                        format!(
                            "{side} {port} is not connected: connect it, or send it to Discard"
                        ),
                    ));
                }
            }
        }
    }
    if !errors.is_empty() {
        // The graph cannot be resolved with classes missing or ports out
        // of range, but every element whose class is known and whose
        // ports fit can still have its arguments checked, so that one
        // `bricks check` reports everything it can.
        check_args_only(router, &classes, &bad_ports, &inputs, &outputs, &mut errors);
        return Err(errors);
    }
    let classes: Vec<ElementClass> = classes.into_iter().map(|c| c.unwrap()).collect();
    let specs: Vec<ProcessingSpec> = classes.iter().map(|c| c.processing_spec()).collect();

    // Push and pull. Every element's agnostic ports form one group (Click's
    // default flow code: any input may flow to any output), group 2i;
    // an element whose inputs flow to no output (Click's `x/y`, Idle)
    // has its agnostic outputs in a group of their own, 2i + 1.
    let mut res = Resolver {
        parent: (0..2 * n).collect(),
        value: vec![None; 2 * n],
    };
    let split: Vec<bool> = (0..n)
        .map(|i| {
            let name = classes[i].name;
            !(0..inputs[i].len()).any(|a| (0..outputs[i].len()).any(|b| flows(name, a, b)))
        })
        .collect();
    let side_out = |i: usize, p: usize| match specs[i].output(p) {
        Processing::Agnostic => Side::Group(2 * i + usize::from(split[i])),
        x => Side::Fixed(x),
    };
    let side_in = |i: usize, p: usize| match specs[i].input(p) {
        Processing::Agnostic => Side::Group(2 * i),
        x => Side::Fixed(x),
    };
    let conflict = |c: &bricks_config::Connection, out: Processing| -> Diagnostic {
        let from = &router.elements[c.from];
        let to = &router.elements[c.to];
        if out == Processing::Push {
            with_help(
                diag(
                    c.span,
                    format!(
                        "push output {} of `{}` connected to pull input {} of `{}`",
                        c.from_port, from.name, c.to_port, to.name
                    ),
                ),
                "put a Queue between them",
            )
        } else {
            with_help(
                diag(
                    c.span,
                    format!(
                        "pull output {} of `{}` connected to push input {} of `{}`",
                        c.from_port, from.name, c.to_port, to.name
                    ),
                ),
                "put an Unqueue between them",
            )
        }
    };
    // Fixed constraints first, then unions, so that a conflict is reported
    // on a connection that shows it.
    for c in &router.connections {
        let a = side_out(c.from, c.from_port);
        let b = side_in(c.to, c.to_port);
        match (a, b) {
            (Side::Fixed(x), Side::Fixed(y)) if x != y => errors.push(conflict(c, x)),
            (Side::Fixed(x), Side::Group(g)) | (Side::Group(g), Side::Fixed(x)) => {
                let r = res.find(g);
                match res.value[r] {
                    None => res.value[r] = Some(x),
                    Some(v) if v != x => {
                        let out = match a {
                            Side::Fixed(x) => x,
                            _ => v,
                        };
                        errors.push(conflict(c, out));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for c in &router.connections {
        if let (Side::Group(g), Side::Group(h)) =
            (side_out(c.from, c.from_port), side_in(c.to, c.to_port))
        {
            let (rg, rh) = (res.find(g), res.find(h));
            if rg == rh {
                continue;
            }
            match (res.value[rg], res.value[rh]) {
                (Some(x), Some(y)) if x != y => errors.push(conflict(c, x)),
                (vg, vh) => {
                    res.parent[rh] = rg;
                    res.value[rg] = vg.or(vh);
                }
            }
        }
    }
    // A push/pull conflict leaves some groups undecided (they default to
    // push below): the connection-count and cycle checks would only repeat
    // it, but arguments are still worth checking.
    let conflicts = !errors.is_empty();
    let mut resolve = |s: Side| match s {
        Side::Fixed(x) => x,
        Side::Group(g) => {
            let r = res.find(g);
            res.value[r].unwrap_or(Processing::Push)
        }
    };
    let ports: Vec<PortInfo> = (0..n)
        .map(|i| PortInfo {
            inputs: (0..inputs[i].len())
                .map(|p| resolve(side_in(i, p)))
                .collect(),
            outputs: (0..outputs[i].len())
                .map(|p| resolve(side_out(i, p)))
                .collect(),
        })
        .collect();

    // Connection counts.
    for i in (0..n).filter(|_| !conflicts) {
        let decl = &router.elements[i];
        for (p, conns) in outputs[i].iter().enumerate() {
            if ports[i].outputs[p] == Processing::Push && conns.len() > 1 {
                // Click's wording, at the element as Click reports it; the
                // second connection is the note.
                let mut d = with_help(
                    diag(
                        decl.name_span,
                        format!(
                            "illegal reuse of `{} :: {}` push output {p}",
                            decl.name, decl.class
                        ),
                    ),
                    "a push output goes to one place: use a Tee to copy packets",
                );
                d.notes
                    .push((out_spans[i][p][1], "connected a second time here".into()));
                errors.push(d);
            }
        }
        for (p, conns) in inputs[i].iter().enumerate() {
            if ports[i].inputs[p] == Processing::Pull && conns.len() > 1 {
                let mut d = with_help(
                    diag(
                        decl.name_span,
                        format!(
                            "illegal reuse of `{} :: {}` pull input {p}",
                            decl.name, decl.class
                        ),
                    ),
                    "a pull input pulls from one place: use a scheduler such as RoundRobinSched",
                );
                d.notes
                    .push((in_spans[i][p][1], "connected a second time here".into()));
                errors.push(d);
            }
        }
    }

    // Pull cycles would recurse forever. Push cycles are legal, as in Click
    // (the graph defers a push into a busy element).
    // The graph walked is one of output ports: a pull output leads to the
    // outputs its downstream element's input flows to (every output, but
    // for the classes in `flows`), so a Bypass whose return path comes
    // back into it is no cycle.
    let first_out: Vec<usize> = ports
        .iter()
        .scan(0, |at, p| {
            let first = *at;
            *at += p.outputs.len();
            Some(first)
        })
        .collect();
    let owner: Vec<usize> = (0..n)
        .flat_map(|i| std::iter::repeat_n(i, ports[i].outputs.len()))
        .collect();
    for want in [Processing::Pull].into_iter().filter(|_| !conflicts) {
        if let Some(cycle) = find_cycle(owner.len(), |o| {
            let (i, p) = (owner[o], o - first_out[owner[o]]);
            let mut next = Vec::new();
            if ports[i].outputs[p] == want {
                for &(e, q) in &outputs[i][p] {
                    let class = &router.elements[e].class;
                    next.extend(
                        (0..ports[e].outputs.len())
                            .filter(|&p2| flows(class, q, p2))
                            .map(|p2| first_out[e] + p2),
                    );
                }
            }
            next
        }) {
            let mut names: Vec<&str> = cycle
                .iter()
                .map(|&o| router.elements[owner[o]].name.as_str())
                .collect();
            names.dedup();
            errors.push(with_help(
                diag(
                    router.elements[cycle[0]].name_span,
                    format!("{} cycle: {}", want.as_str(), names.join(" -> ")),
                ),
                "a pull would ask itself for packets forever; break the cycle with a Queue and an Unqueue",
            ));
        }
    }
    if errors.is_empty() {
        errors.extend(pull_chain_too_deep(router, &ports, &outputs));
    }

    // Arguments, and each element's task; checked even when the graph has
    // errors, so that one `bricks check` reports them all.
    let mut elements = Vec::with_capacity(n);
    let mut directives = Vec::new();
    let mut messages = absent_warnings;
    let old_index: HashMap<&str, usize> = old
        .map(|p| {
            p.elements
                .iter()
                .enumerate()
                .map(|(i, e)| (e.name.as_str(), i))
                .collect()
        })
        .unwrap_or_default();
    let old = old.map(|p| (p, &old_index));
    let slots: Vec<Arc<SharedSlot>> = router
        .elements
        .iter()
        .zip(&classes)
        .map(|(d, c)| carried_slot(old, &d.name, c.name, &d.args))
        .collect();
    let refs = Refs::new(
        (0..n)
            .map(|i| Target {
                name: &router.elements[i].name,
                class: Some(classes[i]),
                args: &router.elements[i].args,
                span: router.elements[i].config_span,
                ports: Some(&ports[i]),
                shared: &slots[i],
            })
            .collect(),
        &outputs,
        &inputs,
        options,
    );
    for i in 0..n {
        let decl = &router.elements[i];
        let mut task = TaskKind::None;
        let mut every_worker = false;
        let shared = Arc::clone(&slots[i]);
        match refs.make(i) {
            Ok(e) => {
                task = e.task_kind();
                every_worker = e.task_on_every_worker();
                let d = e.task_directives();
                if !d.is_empty() {
                    directives.push((i, d));
                }
                messages.extend(e.configure_message().map(|m| (i, m)));
            }
            Err(mut d) => {
                d.message = configure_message(&decl.name, &decl.class, &d.message);
                errors.push(d);
            }
        }
        elements.push(PlanElement {
            name: decl.name.clone(),
            class: classes[i],
            // Shared with the parsed configuration, not copied: a
            // million inline routes are a million argument strings.
            args: Arc::clone(&decl.args),
            config_span: decl.config_span,
            ports: ports[i].clone(),
            outputs: std::mem::take(&mut outputs[i]),
            inputs: std::mem::take(&mut inputs[i]),
            task,
            every_worker,
            tickets: crate::DEFAULT_TICKETS,
            placement: Placement::Default,
            shared,
        });
    }
    let subjects: Vec<Subject<'_>> = elements
        .iter()
        .map(|e| Subject {
            name: &e.name,
            task: e.task != TaskKind::None,
            every_worker_source: e.task == TaskKind::Source && e.every_worker,
            class: e.class.name,
        })
        .collect();
    match crate::placement::resolve(&subjects, &directives) {
        Ok((tickets, places, warnings)) => {
            for ((e, t), p) in elements.iter_mut().zip(tickets).zip(places) {
                e.tickets = t;
                e.placement = p;
            }
            messages.extend(warnings);
        }
        Err(e) => errors.extend(e),
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Plan {
        elements,
        options,
        texts: RouterTexts::of(router),
        messages,
        addresses: Some(crate::addresses::book(router))
            .filter(|b| !b.is_empty())
            .map(Arc::new),
    })
}

/// The error for a class the registry does not have: a Click element that
/// bricks lacks is named as such, anything else gets a typo suggestion.
fn unknown_class(decl: &bricks_config::ElementDecl, registry: &Registry) -> Diagnostic {
    let near = bricks_config::suggest(&decl.class, registry.names());
    if crate::is_click_class(&decl.class) {
        let d = diag(
            decl.class_span,
            format!(
                "`{}` is a Click element that bricks does not implement yet",
                decl.class
            ),
        );
        match near {
            Some(s) => with_help(
                d,
                format!("bricks has `{s}`, spelt alike; `bricks elements` lists all it has"),
            ),
            None => with_help(d, "see `bricks elements` for the ones it has"),
        }
    } else {
        // A word used in place of an element (`-> Foo ->`, `Foo(1)`) that
        // names no class is, to Click, an element that was never declared;
        // it says so in those words, and "unknown element class" only
        // after `name ::`.
        let d = diag(
            decl.class_span,
            if decl.anonymous {
                format!(
                    "undeclared element `{}` (no element class has that name)",
                    decl.class
                )
            } else {
                format!("unknown element class `{}`", decl.class)
            },
        );
        match near {
            Some(s) => with_help(d, format!("did you mean `{s}`?")),
            None => with_help(
                d,
                "see `bricks elements` for the element classes bricks has",
            ),
        }
    }
}

/// Checks the arguments of the elements whose class is known and whose
/// ports fit, when the graph as a whole has errors. Their push or pull
/// processing is not resolved: it is taken from the class, agnostic as
/// push, which no argument check depends on.
fn check_args_only(
    router: &Router,
    classes: &[Option<ElementClass>],
    bad_ports: &[bool],
    inputs: &[Vec<Vec<(usize, usize)>>],
    outputs: &[Vec<Vec<(usize, usize)>>],
    errors: &mut Vec<Diagnostic>,
) {
    let push = |p: Processing| match p {
        Processing::Agnostic => Processing::Push,
        x => x,
    };
    let n = router.elements.len();
    let usable: Vec<Option<ElementClass>> = (0..n)
        .map(|i| classes[i].filter(|_| !bad_ports[i]))
        .collect();
    let ports: Vec<Option<PortInfo>> = (0..n)
        .map(|i| {
            let spec = usable[i]?.processing_spec();
            Some(PortInfo {
                inputs: (0..inputs[i].len()).map(|p| push(spec.input(p))).collect(),
                outputs: (0..outputs[i].len())
                    .map(|p| push(spec.output(p)))
                    .collect(),
            })
        })
        .collect();
    let slots: Vec<SharedSlot> = (0..n).map(|_| SharedSlot::new()).collect();
    let refs = Refs::new(
        (0..n)
            .map(|i| Target {
                name: &router.elements[i].name,
                class: usable[i],
                args: &router.elements[i].args,
                span: router.elements[i].config_span,
                ports: ports[i].as_ref(),
                shared: &slots[i],
            })
            .collect(),
        outputs,
        inputs,
        BuildOptions::default(),
    );
    for (i, decl) in router.elements.iter().enumerate() {
        if usable[i].is_none() {
            continue;
        }
        if let Err(mut d) = refs.make(i) {
            d.message = configure_message(&decl.name, &decl.class, &d.message);
            errors.push(d);
        }
    }
}

/// The message of an element's configuration error: `NAME (CLASS): WHY`,
/// WHY one line per problem.
pub fn configure_message(name: &str, class: &str, why: &str) -> String {
    format!("{name} ({class}): {why}")
}

/// A [`configure_message`] taken apart: name, class and the problems.
pub fn split_configure_message(message: &str) -> Option<(&str, &str, &str)> {
    let (name, rest) = message.split_once(" (")?;
    let (class, why) = rest.split_once("): ")?;
    let simple = |w: &str| !w.is_empty() && !w.contains(char::is_whitespace);
    (simple(name) && simple(class)).then_some((name, class, why))
}

/// One element as another element's arguments may name it.
struct Target<'p> {
    name: &'p str,
    /// `None` when its class is unknown or its ports do not fit: it can be
    /// named but not made.
    class: Option<ElementClass>,
    args: &'p [Arg],
    span: Span,
    ports: Option<&'p PortInfo>,
    shared: &'p SharedSlot,
}

/// Whether an element is being made, to find cycles of references.
#[derive(Clone, Copy, PartialEq)]
enum Making {
    No,
    Busy,
}

/// The elements of a configuration for [`ElementRefs`]: names resolve as
/// in Click's `Router::find`, and a named element's shared state is made
/// on first use, by making that element (its own references first). The
/// element is made again in its turn and finds its state made, so the
/// order of declarations does not matter and the result is the same on
/// every run. A cycle of references is an error.
struct Refs<'p> {
    targets: Vec<Target<'p>>,
    /// Per element and output port, the elements connected to it, and per
    /// element and input port, the elements connected to it (for Click's
    /// flow-based searches, [`ElementRefs::downstream`]).
    links: Vec<Vec<Vec<usize>>>,
    back_links: Vec<Vec<Vec<usize>>>,
    options: BuildOptions,
    index: HashMap<&'p str, usize>,
    making: RefCell<Vec<Making>>,
    /// Per element, whether it is a queue packets cross workers through
    /// (`crate::crossing`); empty when none is.
    crossing: Vec<bool>,
}

/// [`Refs`] as seen from one element: names are relative to its compound.
struct Scoped<'r, 'p> {
    refs: &'r Refs<'p>,
    from: usize,
}

impl<'p> Refs<'p> {
    fn new(
        targets: Vec<Target<'p>>,
        outputs: &[Vec<Vec<(usize, usize)>>],
        inputs: &[Vec<Vec<(usize, usize)>>],
        options: BuildOptions,
    ) -> Refs<'p> {
        let elements = |conns: &[Vec<Vec<(usize, usize)>>]| -> Vec<Vec<Vec<usize>>> {
            conns
                .iter()
                .map(|ports| {
                    ports
                        .iter()
                        .map(|c| c.iter().map(|&(e, _)| e).collect())
                        .collect()
                })
                .collect()
        };
        let (links, back_links) = (elements(outputs), elements(inputs));
        let index = targets
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name, i))
            .collect();
        Refs {
            making: RefCell::new(vec![Making::No; targets.len()]),
            targets,
            links,
            back_links,
            options,
            index,
            crossing: Vec::new(),
        }
    }

    /// The elements of one of `classes` reached first from port `port`
    /// of element `from` following `links` (forward or backward), every
    /// port of an element leading to every other: breadth first, each
    /// element once (bounded by the graph's size), nearest first.
    fn flow_search(
        &self,
        from: usize,
        port: usize,
        links: &[Vec<Vec<usize>>],
        classes: &[&str],
    ) -> Vec<usize> {
        let mut seen = vec![false; links.len()];
        seen[from] = true;
        let mut next: std::collections::VecDeque<usize> = links[from]
            .get(port)
            .map_or_else(Default::default, |c| c.iter().copied().collect());
        let mut found = Vec::new();
        while let Some(j) = next.pop_front() {
            if std::mem::replace(&mut seen[j], true) {
                continue;
            }
            if self.targets[j]
                .class
                .is_some_and(|c| classes.contains(&c.name))
            {
                found.push(j);
                continue;
            }
            next.extend(links[j].iter().flatten().copied());
        }
        found
    }

    /// Makes element `i` (one instance), with its references resolved.
    fn make(&self, i: usize) -> Result<Box<dyn Element>, Diagnostic> {
        let t = &self.targets[i];
        let (Some(class), Some(ports)) = (t.class, t.ports) else {
            return Err(diag(t.span, "its configuration has errors"));
        };
        let before = std::mem::replace(&mut self.making.borrow_mut()[i], Making::Busy);
        let scoped = Scoped {
            refs: self,
            from: i,
        };
        let e = make(
            &class,
            t.args,
            t.span,
            ports,
            t.shared,
            &scoped,
            self.options,
        );
        self.making.borrow_mut()[i] = before;
        e
    }
}

impl ElementRefs for Scoped<'_, '_> {
    fn crosses_workers(&self) -> bool {
        self.refs.crossing.get(self.from).copied().unwrap_or(false)
    }

    fn find(&self, name: &str) -> Option<(usize, String, &'static str)> {
        let name = name.trim_start_matches('/');
        let mut ctx = self.refs.targets[self.from].name;
        loop {
            ctx = match ctx.rfind('/') {
                Some(k) => &ctx[..k],
                None => "",
            };
            let full = if ctx.is_empty() {
                name.to_string()
            } else {
                format!("{ctx}/{name}")
            };
            if let Some(&j) = self.refs.index.get(full.as_str()) {
                let class = self.refs.targets[j]
                    .class
                    .map_or("unknown class", |c| c.name);
                return Some((j, full, class));
            }
            if ctx.is_empty() {
                return None;
            }
        }
    }

    fn shared_of(&self, j: usize) -> Result<Arc<dyn Any + Send + Sync>, String> {
        let t = &self.refs.targets[j];
        if let Some(s) = t.shared.get() {
            return Ok(Arc::clone(s));
        }
        if self.refs.making.borrow()[j] == Making::Busy {
            return Err("the element references form a cycle".into());
        }
        const CYCLE: &str = "the element references form a cycle";
        self.refs.make(j).map_err(|d| {
            if d.message.ends_with(CYCLE) {
                CYCLE.to_string()
            } else {
                "its own arguments have errors".to_string()
            }
        })?;
        t.shared
            .get()
            .cloned()
            .ok_or_else(|| "it keeps no state to share".to_string())
    }

    fn downstream(&self, output: usize, classes: &[&str]) -> Vec<usize> {
        self.refs
            .flow_search(self.from, output, &self.refs.links, classes)
    }

    fn upstream(&self, input: usize, classes: &[&str]) -> Vec<usize> {
        self.refs
            .flow_search(self.from, input, &self.refs.back_links, classes)
    }

    fn in_scope(&self, class: &str) -> Vec<usize> {
        let compound = |name: &str| name.rfind('/').map_or("", |k| &name[..k]).to_string();
        let mut ctx = compound(self.refs.targets[self.from].name);
        let mut found = Vec::new();
        loop {
            found.extend(self.refs.targets.iter().enumerate().filter_map(|(j, t)| {
                (t.class.as_ref().is_some_and(|c| c.name == class) && compound(t.name) == ctx)
                    .then_some(j)
            }));
            if ctx.is_empty() {
                return found;
            }
            ctx = compound(&ctx);
        }
    }
}

fn make(
    class: &ElementClass,
    args: &[Arg],
    span: Span,
    ports: &PortInfo,
    shared: &SharedSlot,
    refs: &dyn ElementRefs,
    options: BuildOptions,
) -> Result<Box<dyn Element>, Diagnostic> {
    let mut a = Args::new(args, Some(span))
        .with_shared(shared)
        .with_refs(refs)
        .with_memrefs_default(options.memrefs);
    let e = (class.make)(&mut a, ports).and_then(|e| a.complete().map(|_| e));
    e.map_err(|e| Diagnostic {
        span: e.span.unwrap_or(span),
        message: e.message,
        help: e.help,
        notes: Vec::new(),
    })
}

/// A pull is a call into the element pulled from, which pulls in turn; it
/// cannot be deferred as a push can, so a chain of pulls longer than
/// [`MAX_PULL_DEPTH`] is refused rather than left to overflow a worker's
/// stack. Linear: the pull graph has no cycle (checked before), and its
/// elements are visited once each in topological order.
fn pull_chain_too_deep(
    router: &Router,
    ports: &[PortInfo],
    outputs: &[Vec<Vec<(usize, usize)>>],
) -> Option<Diagnostic> {
    let n = router.elements.len();
    // The elements that pull from `i`.
    let pullers = |i: usize| {
        outputs[i]
            .iter()
            .enumerate()
            .filter(move |&(p, _)| ports[i].outputs.get(p) == Some(&Processing::Pull))
            .flat_map(|(_, conns)| conns.iter().map(|&(e, _)| e))
    };
    let mut waiting = vec![0usize; n];
    for i in 0..n {
        for j in pullers(i) {
            waiting[j] += 1;
        }
    }
    // depth[j]: elements on the longest chain `j` pulls through; from[j]:
    // the element it pulls from on that chain.
    let mut depth = vec![0usize; n];
    let mut from = vec![usize::MAX; n];
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    while let Some(i) = ready.pop() {
        for j in pullers(i) {
            if depth[i] + 1 > depth[j] {
                depth[j] = depth[i] + 1;
                from[j] = i;
            }
            waiting[j] -= 1;
            if waiting[j] == 0 {
                ready.push(j);
            }
        }
    }
    let (deepest, &d) = depth.iter().enumerate().max_by_key(|&(_, d)| *d)?;
    if d <= MAX_PULL_DEPTH {
        return None;
    }
    let mut start = deepest;
    while from[start] != usize::MAX {
        start = from[start];
    }
    let (first, last) = (&router.elements[start], &router.elements[deepest]);
    Some(with_help(
        diag(
            last.name_span,
            format!(
                "`{}` pulls through a chain of {d} elements starting at `{}`; a worker runs pull chains of at most {MAX_PULL_DEPTH}",
                last.name, first.name
            ),
        ),
        "each element of a pull chain is a nested call; break the chain with `-> Unqueue -> Queue ->`, or let the packets be pushed instead (move the Queue to the end)",
    ))
}

/// Whether packets entering input `input` of an element of `class` may
/// leave by output `output` (Click's flow code; every pair unless the
/// class says otherwise). Bypass's return input leads to output 0 only;
/// `Idle`'s inputs lead nowhere (`x/y`), so it may be pushed to and
/// pulled from at once.
fn flows(class: &str, input: usize, output: usize) -> bool {
    match class {
        "Bypass" => !(input == 1 && output == 1),
        "Idle" => false,
        _ => true,
    }
}

/// A cycle in the directed graph `next`, as a list of nodes, if any.
fn find_cycle(n: usize, next: impl Fn(usize) -> Vec<usize>) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; n];
    for start in 0..n {
        if mark[start] != Mark::New {
            continue;
        }
        // Iterative DFS: (node, its successors, next successor to visit).
        let mut stack: Vec<(usize, Vec<usize>, usize)> = vec![(start, next(start), 0)];
        mark[start] = Mark::Open;
        while let Some(top) = stack.last_mut() {
            if top.2 < top.1.len() {
                let s = top.1[top.2];
                top.2 += 1;
                match mark[s] {
                    Mark::Open => {
                        let pos = stack.iter().position(|f| f.0 == s).unwrap_or(0);
                        let mut cycle: Vec<usize> = stack[pos..].iter().map(|f| f.0).collect();
                        cycle.push(s);
                        return Some(cycle);
                    }
                    Mark::New => {
                        mark[s] = Mark::Open;
                        let succ = next(s);
                        stack.push((s, succ, 0));
                    }
                    Mark::Done => {}
                }
            } else {
                mark[top.0] = Mark::Done;
                stack.pop();
            }
        }
    }
    None
}

impl Plan {
    /// Builds a fresh set of element instances, one graph for one worker.
    pub fn instantiate(&self) -> Result<Graph, Diagnostic> {
        self.instantiate_for(1)
    }

    /// [`Plan::instantiate`] for one of `workers` workers: the queues that
    /// packets cross workers through are told so (`crate::crossing`).
    pub fn instantiate_for(&self, workers: usize) -> Result<Graph, Diagnostic> {
        let mut elements = Vec::with_capacity(self.elements.len());
        let mut names = Vec::with_capacity(self.elements.len());
        let mut outs = Vec::with_capacity(self.elements.len());
        let mut ins = Vec::with_capacity(self.elements.len());
        let refs = Refs::new(
            self.elements
                .iter()
                .map(|pe| Target {
                    name: &pe.name,
                    class: Some(pe.class),
                    args: &pe.args,
                    span: pe.config_span,
                    ports: Some(&pe.ports),
                    shared: &pe.shared,
                })
                .collect(),
            &self
                .elements
                .iter()
                .map(|pe| pe.outputs.clone())
                .collect::<Vec<_>>(),
            &self
                .elements
                .iter()
                .map(|pe| pe.inputs.clone())
                .collect::<Vec<_>>(),
            self.options,
        );
        let mut refs = refs;
        refs.crossing = crate::crossing::crossing(self, workers);
        for (i, pe) in self.elements.iter().enumerate() {
            elements.push(refs.make(i)?);
            names.push(pe.name.clone());
            outs.push(
                pe.outputs
                    .iter()
                    .enumerate()
                    .map(|(p, c)| match (pe.ports.outputs[p], c.first()) {
                        (Processing::Push, Some(&(e, q))) => Edge {
                            element: e as u32,
                            port: q as u32,
                        },
                        _ => Edge::NONE,
                    })
                    .collect(),
            );
            ins.push(
                pe.inputs
                    .iter()
                    .enumerate()
                    .map(|(p, c)| match (pe.ports.inputs[p], c.first()) {
                        (Processing::Pull, Some(&(e, q))) => Edge {
                            element: e as u32,
                            port: q as u32,
                        },
                        _ => Edge::NONE,
                    })
                    .collect(),
            );
        }
        let mut graph = Graph::new(elements, names, outs, ins);
        if let Some(book) = &self.addresses {
            graph.set_addresses(book.clone());
        }
        graph.set_meta((0..self.elements.len()).map(|i| self.meta(i)).collect());
        let texts = self.texts.clone();
        graph.set_router_texts(Arc::new(move |h: &str| texts.get(h)));
        Ok(graph)
    }

    /// What the generic read handlers say of element `i`.
    pub fn meta(&self, i: usize) -> ElementMeta {
        let pe = &self.elements[i];
        ElementMeta {
            class: pe.class.name,
            args: pe.args.clone(),
            ports: self.ports_text(i),
        }
    }

    /// Click's `ports` handler text of element `i`
    /// (`Router::element_ports_string`): a count line per side, then per
    /// port its processing (`~` when the class leaves it to the
    /// connections), `-` where Click without statistics prints no packet
    /// count, and what it connects to.
    pub fn ports_text(&self, i: usize) -> String {
        use std::fmt::Write;
        let pe = &self.elements[i];
        let spec = ProcessingSpec::parse(pe.class.processing);
        let word = |p: Processing| {
            if p == Processing::Pull {
                "pull"
            } else {
                "push"
            }
        };
        let mut s = String::new();
        let n = pe.ports.ninputs();
        let _ = writeln!(s, "{n} {}", if n == 1 { "input" } else { "inputs" });
        for (p, &proc_) in pe.ports.inputs.iter().enumerate() {
            let agn = spec
                .as_ref()
                .is_some_and(|sp| sp.input(p) == Processing::Agnostic);
            let _ = write!(s, "{}{}\t-\t", word(proc_), if agn { "~" } else { "" });
            let from: Vec<String> = pe.inputs[p]
                .iter()
                .map(|&(e, q)| format!("{} [{q}]", self.elements[e].name))
                .collect();
            let _ = writeln!(s, "{}", from.join(", "));
        }
        let n = pe.ports.noutputs();
        let _ = writeln!(s, "{n} {}", if n == 1 { "output" } else { "outputs" });
        for (p, &proc_) in pe.ports.outputs.iter().enumerate() {
            let agn = spec
                .as_ref()
                .is_some_and(|sp| sp.output(p) == Processing::Agnostic);
            let _ = write!(s, "{}{}\t-\t", word(proc_), if agn { "~" } else { "" });
            let to: Vec<String> = pe.outputs[p]
                .iter()
                .map(|&(e, q)| format!("[{q}] {}", self.elements[e].name))
                .collect();
            let _ = writeln!(s, "{}", to.join(", "));
        }
        s
    }

    /// The plan as text: each element with its class, ports and where they
    /// lead. `bricks check` prints this.
    pub fn describe(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        for pe in &self.elements {
            let _ = write!(s, "{} :: {}", pe.name, pe.class.name);
            match pe.task {
                TaskKind::Source => s.push_str("  [task: source"),
                TaskKind::Pump => s.push_str("  [task"),
                TaskKind::None => {}
            }
            if pe.task != TaskKind::None {
                if pe.tickets != crate::DEFAULT_TICKETS {
                    let _ = write!(s, ", tickets {}", pe.tickets);
                }
                match pe.placement {
                    Placement::Default => {}
                    Placement::Worker(w) => {
                        let _ = write!(s, ", worker {w}");
                    }
                    Placement::Nowhere => s.push_str(", no worker"),
                }
                s.push(']');
            }
            s.push('\n');
            for (p, conns) in pe.inputs.iter().enumerate() {
                let from: Vec<String> = conns
                    .iter()
                    .map(|&(e, q)| format!("{}[{q}]", self.elements[e].name))
                    .collect();
                let _ = writeln!(
                    s,
                    "    in  {p} {:<4} <- {}",
                    pe.ports.inputs[p].as_str(),
                    from.join(", ")
                );
            }
            for (p, conns) in pe.outputs.iter().enumerate() {
                let to: Vec<String> = conns
                    .iter()
                    .map(|&(e, q)| format!("[{q}]{}", self.elements[e].name))
                    .collect();
                let _ = writeln!(
                    s,
                    "    out {p} {:<4} -> {}",
                    pe.ports.outputs[p].as_str(),
                    to.join(", ")
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_config::{Source, SourceMap};
    use bricks_element::Manual;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An element whose instances count themselves in shared state.
    struct Probe;

    impl Element for Probe {}

    static MANUAL: Manual = Manual {
        summary: "test probe",
        synopsis: "Probe",
        description: "counts its instances in shared state",
        ports: "none",
        keywords: &[],
        counters: &[],
        example: "Probe;",
        see_also: &[],
    };

    static INSTANCES: AtomicUsize = AtomicUsize::new(0);
    static SHARED_MADE: AtomicUsize = AtomicUsize::new(0);

    static PROBE: ElementClass = ElementClass {
        name: "Probe",
        ports: "0/0",
        processing: "a/a",
        manual: &MANUAL,
        make: |args, _| {
            let s = args.shared(|_| {
                SHARED_MADE.fetch_add(1, Ordering::SeqCst);
                Ok(AtomicUsize::new(0))
            })?;
            s.fetch_add(1, Ordering::SeqCst);
            INSTANCES.store(s.load(Ordering::SeqCst), Ordering::SeqCst);
            Ok(Box::new(Probe))
        },
    };

    /// Takes no arguments and keeps no state (unlike `Probe`, whose
    /// counts another test reads).
    static PLAIN: ElementClass = ElementClass {
        name: "Probe",
        ports: "0/0",
        processing: "a/a",
        manual: &MANUAL,
        make: |_, _| Ok(Box::new(Probe)),
    };

    fn errors_of(text: &str) -> Vec<String> {
        let mut reg = crate::Registry::new();
        reg.register(PLAIN);
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<t>".into(),
                text: text.into(),
            },
        )
        .unwrap();
        let errs = build(&router, &reg).unwrap_err();
        errs.iter()
            .map(|d| format!("{} / {}", d.message, d.help.as_deref().unwrap_or("")))
            .collect()
    }

    #[test]
    fn unknown_classes_and_argument_errors_are_reported_together() {
        let errs = errors_of("a :: Probe(BOGUS 1); b :: IPRewriter; c :: Prob; d :: Nothing;");
        assert_eq!(errs.len(), 4, "{errs:#?}");
        assert!(errs[0].starts_with("`IPRewriter` is a Click element that bricks does not implement yet / see `bricks elements`"), "{}", errs[0]);
        assert_eq!(
            errs[1],
            "unknown element class `Prob` / did you mean `Probe`?"
        );
        assert!(
            errs[2].starts_with("unknown element class `Nothing` / see `bricks elements`"),
            "{}",
            errs[2]
        );
        assert!(
            errs[3].starts_with("a (Probe): unknown keyword BOGUS"),
            "{}",
            errs[3]
        );
    }

    #[test]
    fn an_unknown_word_is_an_undeclared_element_as_click_says() {
        // In place of an element: to Click an element never declared;
        // after `name ::`, a class it does not know.
        let errs = errors_of("Nowhere; Nowhere1(); x :: Nowhere2;");
        assert_eq!(errs.len(), 3, "{errs:#?}");
        assert!(
            errs[0].starts_with("undeclared element `Nowhere` (no element class has that name)"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].starts_with("undeclared element `Nowhere1`"),
            "{}",
            errs[1]
        );
        assert!(
            errs[2].starts_with("unknown element class `Nowhere2`"),
            "{}",
            errs[2]
        );
    }

    #[test]
    fn arguments_of_an_element_with_ports_out_of_range_are_not_checked() {
        // Its port count is wrong, so its arguments cannot be judged.
        let errs = errors_of("a :: Probe(BOGUS 1); b :: Probe(BOGUS 2); a[1] -> Nope;");
        assert_eq!(errs.len(), 3, "{errs:#?}");
        assert!(
            errs[0].starts_with("undeclared element `Nope`"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].starts_with("output port 1 out of range: `a`"),
            "{}",
            errs[1]
        );
        assert!(
            errs[2].starts_with("b (Probe): unknown keyword BOGUS"),
            "{}",
            errs[2]
        );
    }

    #[test]
    fn shared_state_is_made_once_per_configured_element() {
        let mut reg = crate::Registry::new();
        reg.register(PROBE);
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<t>".into(),
                text: "p :: Probe;".into(),
            },
        )
        .unwrap();
        let plan = build(&router, &reg).unwrap();
        plan.instantiate().unwrap();
        plan.instantiate().unwrap();
        // Made when the plan was checked; the check and both workers'
        // instances saw the same value.
        assert_eq!(SHARED_MADE.load(Ordering::SeqCst), 1);
        assert_eq!(INSTANCES.load(Ordering::SeqCst), 3);
    }

    /// A table every worker shares, and an element that names one.
    struct Table(AtomicUsize);

    static TABLE: ElementClass = ElementClass {
        name: "Table",
        ports: "0/0",
        processing: "a/a",
        manual: &MANUAL,
        make: |args, _| {
            let size: usize = args.read_p("SIZE")?.unwrap_or(1);
            args.shared(|_| Ok(Table(AtomicUsize::new(size))))?;
            Ok(Box::new(Probe))
        },
    };

    /// Names a `Table`; another `User` may be named with PEER (cycles).
    static USER: ElementClass = ElementClass {
        name: "User",
        ports: "0/0",
        processing: "a/a",
        manual: &MANUAL,
        make: |args, _| {
            let t: Arc<Table> = args.read_shared_of_mp("TABLE", "Table")?;
            t.0.fetch_add(1000, Ordering::SeqCst);
            if args.read::<String>("PEER")?.is_some() {
                args.shared(|a| {
                    // Re-read through the reference API: a User names a User.
                    a.read_shared_of_mp::<Table>("PEER", "User").map(|_| ())
                })?;
            }
            Ok(Box::new(Probe))
        },
    };

    fn build_refs(text: &str) -> Result<Plan, Vec<String>> {
        let mut reg = crate::Registry::new();
        reg.register(TABLE);
        reg.register(USER);
        reg.register(PLAIN);
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<t>".into(),
                text: text.into(),
            },
        )
        .unwrap();
        build(&router, &reg).map_err(|errs| {
            errs.iter()
                .map(|d| {
                    let at = &text[d.span.start..d.span.end];
                    format!("{} @{at}", d.message)
                })
                .collect()
        })
    }

    fn table_of(plan: &Plan, name: &str) -> Arc<Table> {
        let pe = plan.elements.iter().find(|e| e.name == name).unwrap();
        Arc::clone(pe.shared.get().unwrap())
            .downcast::<Table>()
            .ok()
            .unwrap()
    }

    #[test]
    fn a_user_declared_before_its_table_gets_the_one_table() {
        let plan = build_refs("u :: User(TABLE t); t :: Table(5); v :: User(t);").unwrap();
        let t = table_of(&plan, "t");
        // Made once; both users' check instances added to it.
        assert_eq!(t.0.load(Ordering::SeqCst), 2005);
        plan.instantiate().unwrap();
        plan.instantiate().unwrap();
        // Every worker's users reach the same table.
        assert_eq!(t.0.load(Ordering::SeqCst), 6005);
        assert!(Arc::ptr_eq(&t, &table_of(&plan, "t")));
    }

    #[test]
    fn names_are_relative_to_the_compound_then_outward() {
        let text = "elementclass C { t :: Table(7); u :: User(t); w :: User(top); }
                    top :: Table(1); t :: Table(2); c :: C; x :: User(c/t);";
        let plan = build_refs(text).unwrap();
        // c/u found its own compound's t (7), not the top-level t (2).
        assert_eq!(table_of(&plan, "c/t").0.load(Ordering::SeqCst), 7 + 2000);
        assert_eq!(table_of(&plan, "t").0.load(Ordering::SeqCst), 2);
        // c/w found `top` outside its compound.
        assert_eq!(table_of(&plan, "top").0.load(Ordering::SeqCst), 1001);
    }

    #[test]
    fn unknown_names_and_wrong_classes_are_located_errors() {
        let errs = build_refs("u :: User(TABLE nope); p :: Probe; v :: User(p);").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert_eq!(
            errs[0],
            "u (User): TABLE `nope` does not name an element @TABLE nope"
        );
        assert_eq!(errs[1], "v (User): TABLE `p` is a Probe, not a Table @p");
    }

    #[test]
    fn a_table_with_bad_arguments_is_reported_once_and_its_users_say_why() {
        let errs = build_refs("u :: User(t); t :: Table(SIZE lots);").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert_eq!(
            errs[0],
            "u (User): TABLE `t`: its own arguments have errors @t"
        );
        assert!(
            errs[1].starts_with("t (Table): bad argument SIZE"),
            "{}",
            errs[1]
        );
    }

    #[test]
    fn reference_cycles_are_refused() {
        let errs =
            build_refs("t :: Table; a :: User(t, PEER b); b :: User(t, PEER a);").unwrap_err();
        assert!(errs.iter().any(|e| e.contains("cycle")), "{errs:#?}");
    }
}
