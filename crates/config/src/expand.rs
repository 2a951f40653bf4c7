//! Compound-element expansion: from parsed scopes to one flat graph.
//!
//! Each compound element is instantiated by instantiating its class body
//! under the prefix `name/`, so names come out as Click's do
//! (`outer/inner`, `outer/Queue@1`). The body's `input` and `output` become
//! pass-through nodes: every connection is first recorded between real
//! elements and these nodes, then each connection leaving a real element
//! is followed through pass-through nodes to every real element it
//! reaches. An input port connected to several places inside thus fans
//! out, and `input -> output` passes straight through.
//!
//! `$variables` are substituted here, in each element's argument text, from
//! the innermost scope outwards: the compound's parameters and `define`s,
//! those of the compounds it is lexically nested in, then the file's
//! `define`s.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

use crate::args::{self, Vars};
use crate::parser::{Binding, Body, ClassRef, CompoundClass, LocalElem, Parsed};
use crate::source::{Diagnostic, SourceMap, Span};
use crate::suggest::suggest;
use crate::{Arg, ArgText, Connection, ElementDecl, Limits, Options};

/// Variables of one scope instance.
#[derive(Default)]
struct Frame {
    vars: HashMap<String, String>,
}

/// Looks variables up in `local` (a frame being built) then `frames`,
/// innermost last.
struct Lookup<'e> {
    local: Option<&'e HashMap<String, String>>,
    frames: &'e [Rc<Frame>],
}

impl Lookup<'_> {
    fn get(&self, name: &str) -> Option<&String> {
        if let Some(v) = self.local.and_then(|l| l.get(name)) {
            return Some(v);
        }
        self.frames.iter().rev().find_map(|f| f.vars.get(name))
    }
}

impl Vars for Lookup<'_> {
    fn lookup(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    Real(usize),
    /// A compound instance's `input` or `output`.
    Pass(usize),
}

struct Edge {
    from: (Node, usize),
    to: (Node, usize),
    span: Span,
}

/// How a scope entry was instantiated.
#[derive(Clone)]
enum Handle {
    None,
    Real(usize),
    Compound {
        input: usize,
        output: usize,
        class: usize,
    },
    /// The enclosing compound's `input` (a pass-through node).
    Input(usize),
    /// An element group's input or output (a pass-through node).
    Tunnel(usize),
    Output(usize),
}

struct Expander<'p> {
    parsed: &'p Parsed,
    map: &'p SourceMap,
    limits: &'p Limits,
    elements: Vec<ElementDecl>,
    edges: Vec<Edge>,
    pass_nodes: usize,
    errors: Vec<Diagnostic>,
    seen: HashSet<(Span, String)>,
    config_bytes: usize,
    stop: bool,
}

pub(crate) fn expand(
    parsed: &Parsed,
    map: &SourceMap,
    options: &Options,
) -> Result<(Vec<ElementDecl>, Vec<Connection>), Vec<Diagnostic>> {
    let mut x = Expander {
        parsed,
        map,
        limits: &options.limits,
        elements: Vec::new(),
        edges: Vec::new(),
        pass_nodes: 0,
        errors: Vec::new(),
        seen: HashSet::new(),
        config_bytes: 0,
        stop: false,
    };
    let globals = x.globals(&parsed.top, &options.defines);
    let frames = vec![Rc::new(globals)];
    x.instantiate(&parsed.top, "", &frames, 0, &[], None);
    let connections = if x.stop { Vec::new() } else { x.resolve() };
    if !x.stop {
        x.check_unique_names();
    }
    if x.errors.is_empty() {
        Ok((x.elements, connections))
    } else {
        Err(x.errors)
    }
}

impl<'p> Expander<'p> {
    fn text(&self, file: u32) -> &'p str {
        self.map.get(file).map_or("", |s| s.text.as_str())
    }

    fn report(&mut self, d: Diagnostic) {
        if self.seen.insert((d.span, d.message.clone())) {
            self.errors.push(d);
        }
    }

    /// Stops expansion with an error about a limit.
    fn limit(&mut self, span: Span, message: String) {
        if !self.stop {
            self.stop = true;
            let d = Diagnostic::error(span, message)
                .with_help("this limit guards against configurations that expand exponentially");
            self.errors.push(d);
        }
    }

    /// The file's `define`s, then the caller's overrides.
    fn globals(&mut self, top: &Body, overrides: &[(String, String)]) -> Frame {
        let mut frame = Frame::default();
        let mut first: HashMap<&str, Span> = HashMap::new();
        for d in &top.defines {
            if let Some(prev) = first.insert(&d.name, d.span) {
                let diag =
                    Diagnostic::error(d.span, format!("variable `${}` defined twice", d.name))
                        .with_note(prev, "first defined here");
                self.report(diag);
                continue;
            }
            if overrides.iter().any(|(n, _)| *n == d.name) {
                continue;
            }
            let value = self.define_value(d.span.file, d.value, &frame.vars, &[]);
            frame.vars.insert(d.name.clone(), value);
        }
        for (name, value) in overrides {
            frame
                .vars
                .insert(name.trim_start_matches('$').to_string(), value.clone());
        }
        frame
    }

    fn define_value(
        &mut self,
        file: u32,
        (s, e): (usize, usize),
        local: &HashMap<String, String>,
        frames: &[Rc<Frame>],
    ) -> String {
        let mut lookup = Lookup {
            local: Some(local),
            frames,
        };
        args::process(&self.text(file)[s..e], Some(&mut lookup)).text
    }

    /// Substitutes and splits an element's arguments: the arguments, and
    /// the whole argument text (variables substituted, comments removed).
    fn arguments(&mut self, e: &LocalElem, frames: &[Rc<Frame>]) -> (Vec<Arg>, Arc<str>) {
        let Some((base, end)) = e.config else {
            return (Vec::new(), Arc::from(""));
        };
        let file = e.config_span.file;
        let raw = &self.text(file)[base..end];
        let mut quiet = Lookup {
            local: None,
            frames,
        };
        // With nothing in the list to remove or substitute, the whole text
        // is the list trimmed, and each argument its piece trimmed: a
        // range of the whole text, which the arguments share instead of a
        // copy each.
        let plain = args::is_plain(raw);
        let (config, shift): (Arc<str>, usize) = match (plain, args::trimmed(raw)) {
            (true, Some((first, last))) => (Arc::from(&raw[first..last]), first),
            (true, None) => (Arc::from(""), 0),
            (false, _) => (
                Arc::from(args::process(raw, Some(&mut quiet)).text.as_str()),
                0,
            ),
        };
        let mut lookup = Lookup {
            local: None,
            frames,
        };
        let pieces = args::split_top(raw);
        let count = pieces.len();
        let mut out: Vec<Arg> = Vec::with_capacity(count);
        for (k, (a, b)) in pieces.into_iter().enumerate() {
            if plain {
                let (text, span) = match args::trimmed(&raw[a..b]) {
                    Some((cs, ce)) => (
                        ArgText::shared(&config, a + cs - shift..a + ce - shift),
                        Span::new(file, base + a + cs, base + a + ce),
                    ),
                    None => (ArgText::default(), Span::new(file, base + a, base + a)),
                };
                if !(k + 1 == count && text.is_empty()) {
                    out.push(Arg { text, span });
                }
                continue;
            }
            let p = args::process(&raw[a..b], Some(&mut lookup));
            let span = match p.content {
                Some((cs, ce)) => Span::new(file, base + a + cs, base + a + ce),
                None => Span::new(file, base + a, base + a),
            };
            if k + 1 == count && p.text.is_empty() {
                // Click drops a final empty argument: `Foo(a, b,)`.
                continue;
            }
            if p.substituted {
                // As Click, which substitutes before splitting: a value may
                // bring commas (`__REST__`), or be empty and leave space.
                let split = args::split_top(&p.text);
                let n = split.len();
                for (j, (s, t)) in split.into_iter().enumerate() {
                    let text = args::process(&p.text[s..t], None).text;
                    if !(j + 1 == n && k + 1 == count && text.is_empty()) {
                        out.push(Arg {
                            text: text.into(),
                            span,
                        });
                    }
                }
                continue;
            }
            out.push(Arg {
                text: p.text.into(),
                span,
            });
        }
        self.config_bytes += raw.len() + 2 * config.len();
        if self.config_bytes > self.limits.max_config_bytes {
            let span = e.config_span;
            self.limit(
                span,
                format!(
                    "configuration expands to more than {} bytes of argument text",
                    self.limits.max_config_bytes
                ),
            );
        }
        (out, config)
    }

    #[allow(clippy::too_many_arguments)]
    fn instantiate(
        &mut self,
        body: &Body,
        prefix: &str,
        frames: &[Rc<Frame>],
        depth: usize,
        context: &[(Span, String)],
        ports: Option<(usize, usize)>,
    ) {
        let mut handles = vec![Handle::None; body.elems.len()];
        // The port counts each entry uses, computed when an overloaded
        // class needs them.
        let mut port_use: Option<Vec<(usize, usize)>> = None;
        for (i, e) in body.elems.iter().enumerate() {
            if self.stop {
                return;
            }
            if e.alias_of.is_some() {
                continue;
            }
            let mut class_ref = e.class.clone();
            if let ClassRef::Compound(k) = class_ref {
                if self.parsed.classes[k].overload.is_some() {
                    let (args, _) = self.arguments(e, frames);
                    let used = port_use.get_or_insert_with(|| used_ports(body))[i];
                    match self.resolve_overload(k, &args, used, e) {
                        Some(r) => class_ref = r,
                        None => continue,
                    }
                }
            }
            handles[i] = match &class_ref {
                ClassRef::Input => ports.map_or(Handle::None, |(input, _)| Handle::Input(input)),
                ClassRef::Tunnel(_) => {
                    self.pass_nodes += 1;
                    Handle::Tunnel(self.pass_nodes - 1)
                }
                ClassRef::Output => {
                    ports.map_or(Handle::None, |(_, output)| Handle::Output(output))
                }
                ClassRef::Primitive(class) => {
                    if self.elements.len() >= self.limits.max_elements {
                        self.limit(
                            e.name_span,
                            format!(
                                "configuration expands to more than {} elements",
                                self.limits.max_elements
                            ),
                        );
                        return;
                    }
                    let (args, config) = self.arguments(e, frames);
                    self.elements.push(ElementDecl {
                        name: format!("{prefix}{}", e.name),
                        class: class.clone(),
                        class_span: e.class_span,
                        name_span: e.name_span,
                        args: args.into(),
                        config,
                        config_span: e.config_span,
                        anonymous: e.declared.is_none(),
                        expansion: context.to_vec(),
                    });
                    Handle::Real(self.elements.len() - 1)
                }
                ClassRef::Compound(k) => {
                    if depth >= self.limits.max_depth {
                        self.limit(
                            e.name_span,
                            format!(
                                "compound elements nested more than {} deep",
                                self.limits.max_depth
                            ),
                        );
                        return;
                    }
                    let class = &self.parsed.classes[*k];
                    let (args, _) = self.arguments(e, frames);
                    let name = format!("{prefix}{}", e.name);
                    let mut ctx = Vec::with_capacity(context.len() + 1);
                    ctx.push((
                        e.name_span,
                        format!(
                            "in `{name}`, an instance of element class `{}`",
                            class.shown()
                        ),
                    ));
                    ctx.extend_from_slice(context);
                    let Some(vars) = self.bind(class, &args, e) else {
                        continue;
                    };
                    // Lexical scoping: the class sees the frames of the
                    // scopes it was defined in, not those of its user.
                    let outer = &frames[..class.depth.min(frames.len())];
                    let mut frame = Frame { vars };
                    for d in &class.body.defines {
                        let value = self.define_value(d.span.file, d.value, &frame.vars, outer);
                        frame.vars.insert(d.name.clone(), value);
                    }
                    let mut inner = outer.to_vec();
                    inner.push(Rc::new(frame));
                    let (input, output) = (self.pass_nodes, self.pass_nodes + 1);
                    self.pass_nodes += 2;
                    self.instantiate(
                        &class.body,
                        &format!("{name}/"),
                        &inner,
                        depth + 1,
                        &ctx,
                        Some((input, output)),
                    );
                    Handle::Compound {
                        input,
                        output,
                        class: *k,
                    }
                }
            };
        }
        for c in &body.conns {
            if self.stop {
                return;
            }
            let from = match handles[c.from] {
                Handle::Real(i) => Some(Node::Real(i)),
                Handle::Input(n) | Handle::Tunnel(n) => Some(Node::Pass(n)),
                Handle::Compound { output, class, .. } => self
                    .compound_port(body, c.from, class, c.from_port, false, c.span)
                    .then_some(Node::Pass(output)),
                Handle::Output(_) | Handle::None => None,
            };
            let to = match handles[c.to] {
                Handle::Real(i) => Some(Node::Real(i)),
                Handle::Output(n) | Handle::Tunnel(n) => Some(Node::Pass(n)),
                Handle::Compound { input, class, .. } => self
                    .compound_port(body, c.to, class, c.to_port, true, c.span)
                    .then_some(Node::Pass(input)),
                Handle::Input(_) | Handle::None => None,
            };
            if let (Some(from), Some(to)) = (from, to) {
                self.edges.push(Edge {
                    from: (from, c.from_port),
                    to: (to, c.to_port),
                    span: c.span,
                });
            }
        }
    }

    /// Chooses among the `||` alternatives of compound class `k` the first
    /// whose parameters fit `args` and whose port counts are those the
    /// element uses, as Click's `Compound::resolve` does; `...` at the end
    /// falls back to the class's earlier meaning. A class with a single
    /// alternative is taken as it is (its errors come later).
    fn resolve_overload(
        &mut self,
        k: usize,
        args: &[Arg],
        (ninputs, noutputs): (usize, usize),
        e: &LocalElem,
    ) -> Option<ClassRef> {
        let mut current = Binding::Compound(k);
        let mut candidates: Vec<usize> = Vec::new();
        loop {
            match current {
                Binding::Primitive(p) => return Some(ClassRef::Primitive(p)),
                Binding::Compound(c) => {
                    let class = &self.parsed.classes[c];
                    if candidates.len() > self.parsed.classes.len() {
                        break;
                    }
                    candidates.push(c);
                    if args_fit(class, args)
                        && port_count(&class.body.inputs) == ninputs
                        && port_count(&class.body.outputs) == noutputs
                    {
                        return Some(ClassRef::Compound(c));
                    }
                    match &class.overload {
                        Some(next) => current = next.clone(),
                        None => break,
                    }
                }
            }
        }
        if candidates.len() == 1 {
            return Some(ClassRef::Compound(k));
        }
        let name = self.parsed.classes[k].shown();
        let mut d = Diagnostic::error(
            e.name_span,
            format!(
                "no match for `{name}` with {}, {} and {}",
                plural(args.len(), "argument"),
                plural(ninputs, "input"),
                plural(noutputs, "output")
            ),
        )
        .with_help("each `||` alternative is chosen by its number of parameters and of ports");
        for c in candidates {
            let class = &self.parsed.classes[c];
            let params = class.formals.iter().filter(|f| f.keyword.is_none()).count();
            d = d.with_note(
                class.variant_span,
                format!(
                    "candidate: {}, {} and {}",
                    plural(params, "parameter"),
                    plural(port_count(&class.body.inputs), "input"),
                    plural(port_count(&class.body.outputs), "output")
                ),
            );
        }
        self.report(d);
        None
    }

    /// Checks that a compound element has the port a connection uses.
    fn compound_port(
        &mut self,
        body: &Body,
        entry: usize,
        class: usize,
        port: usize,
        input: bool,
        span: Span,
    ) -> bool {
        let class = &self.parsed.classes[class];
        let ports = if input {
            &class.body.inputs
        } else {
            &class.body.outputs
        };
        if ports.contains(&port) {
            return true;
        }
        let (kind, plural) = if input {
            ("input", "inputs")
        } else {
            ("output", "outputs")
        };
        let name = &body.elems[entry].name;
        let listed = ports.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let help = if listed.is_empty() {
            format!("element class `{}` has no {plural}", class.shown())
        } else {
            format!(
                "element class `{}` has {plural} {}",
                class.shown(),
                listed.join(", ")
            )
        };
        let how = if input {
            format!("its body forwards an input port with `input[{port}] -> ...`")
        } else {
            format!("its body feeds an output port with `... -> [{port}]output`")
        };
        let d = Diagnostic::error(span, format!("`{name}` has no {kind} {port}"))
            .with_help(format!("{help}; {how}"))
            .with_note(
                class.name_span,
                format!("element class `{}` defined here", class.shown()),
            );
        self.report(d);
        false
    }

    /// Matches a compound element's arguments to its class's parameters.
    fn bind(
        &mut self,
        class: &CompoundClass,
        args: &[Arg],
        e: &LocalElem,
    ) -> Option<HashMap<String, String>> {
        let mut vars = HashMap::new();
        let mut ok = true;
        let positional: Vec<&str> = class
            .formals
            .iter()
            .filter(|f| f.keyword.is_none())
            .map(|f| f.var.as_str())
            .collect();
        let rest = class
            .formals
            .iter()
            .find(|f| f.keyword.as_deref() == Some("__REST__"));
        let mut rest_values: Vec<&str> = Vec::new();
        let mut next = 0;
        let mut seen_keywords: HashMap<&str, Span> = HashMap::new();
        for arg in args {
            let (keyword, value) = args::split_keyword(&arg.text);
            let formal = keyword.and_then(|k| {
                class
                    .formals
                    .iter()
                    .find(|f| f.keyword.as_deref() == Some(k) && k != "__REST__")
            });
            if let (Some(k), Some(f)) = (keyword, formal) {
                if let Some(prev) = seen_keywords.insert(k, arg.span) {
                    let d = Diagnostic::error(arg.span, format!("keyword `{k}` given twice"))
                        .with_note(prev, "first given here");
                    self.report(d);
                    ok = false;
                }
                vars.insert(f.var.clone(), value.to_string());
            } else if next < positional.len() {
                vars.insert(positional[next].to_string(), arg.text.to_string());
                next += 1;
            } else if rest.is_some() {
                rest_values.push(&arg.text);
            } else {
                let expected = match positional.len() {
                    0 => "no positional arguments".to_string(),
                    1 => "1 positional argument".to_string(),
                    n => format!("{n} positional arguments"),
                };
                let keywords: Vec<&str> = class
                    .formals
                    .iter()
                    .filter_map(|f| f.keyword.as_deref())
                    .collect();
                let mut d = Diagnostic::error(
                    arg.span,
                    format!(
                        "too many arguments for element class `{}`, which takes {expected}",
                        class.shown()
                    ),
                )
                .with_note(
                    class.name_span,
                    format!("element class `{}` defined here", class.shown()),
                );
                if let Some(k) = keyword.and_then(|k| suggest(k, keywords.iter().copied())) {
                    d = d.with_help(format!("did you mean keyword `{k}`?"));
                } else if !keywords.is_empty() {
                    d = d.with_help(format!("its keywords are {}", keywords.join(", ")));
                }
                self.report(d);
                ok = false;
            }
        }
        if next < positional.len() {
            let missing = positional[next..]
                .iter()
                .map(|v| format!("`${v}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let span = if e.config.is_some() {
                e.config_span
            } else {
                e.class_span
            };
            let d = Diagnostic::error(
                span,
                format!(
                    "missing arguments for element class `{}`: {missing}",
                    class.shown()
                ),
            )
            .with_note(
                class.name_span,
                format!("element class `{}` defined here", class.shown()),
            );
            self.report(d);
            ok = false;
        }
        for f in &class.formals {
            if f.keyword.is_some() {
                vars.entry(f.var.clone()).or_default();
            }
        }
        if let Some(rest) = rest {
            vars.insert(rest.var.clone(), rest_values.join(", "));
        }
        ok.then_some(vars)
    }

    /// Follows every connection from a real element through pass-through
    /// nodes to the real elements it reaches.
    fn resolve(&mut self) -> Vec<Connection> {
        let mut out_edges: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for (i, e) in self.edges.iter().enumerate() {
            if let (Node::Pass(n), port) = e.from {
                out_edges.entry((n, port)).or_default().push(i);
            }
        }
        let mut seen: HashSet<(usize, usize, usize, usize)> = HashSet::new();
        let mut connections = Vec::new();
        let mut work = 0usize;
        let max_work = self.limits.max_connections.saturating_mul(16);
        let mut stack: Vec<(Node, usize)> = Vec::new();
        let mut visited: HashSet<(usize, usize)> = HashSet::new();
        for e in &self.edges {
            let (Node::Real(from), from_port) = e.from else {
                continue;
            };
            stack.clear();
            visited.clear();
            stack.push(e.to);
            while let Some((node, port)) = stack.pop() {
                work += 1;
                if work > max_work || connections.len() >= self.limits.max_connections {
                    let span = e.span;
                    self.limit(
                        span,
                        format!(
                            "configuration expands to more than {} connections",
                            self.limits.max_connections
                        ),
                    );
                    return Vec::new();
                }
                match node {
                    Node::Real(to) => {
                        if seen.insert((from, from_port, to, port)) {
                            connections.push(Connection {
                                from,
                                from_port,
                                to,
                                to_port: port,
                                span: e.span,
                            });
                        }
                    }
                    Node::Pass(n) => {
                        if visited.insert((n, port)) {
                            if let Some(next) = out_edges.get(&(n, port)) {
                                stack.extend(next.iter().rev().map(|&i| self.edges[i].to));
                            }
                        }
                    }
                }
            }
        }
        connections
    }

    /// A name declared with `/` at one level may clash with an element of
    /// a compound expanded at another.
    fn check_unique_names(&mut self) {
        let mut names: HashMap<&str, usize> = HashMap::new();
        let mut clashes = Vec::new();
        for (i, e) in self.elements.iter().enumerate() {
            if let Some(&prev) = names.get(e.name.as_str()) {
                clashes.push((prev, i));
            } else {
                names.insert(&e.name, i);
            }
        }
        for (prev, i) in clashes {
            let (a, b) = (&self.elements[prev], &self.elements[i]);
            let d = Diagnostic::error(b.name_span, format!("two elements are named `{}`", b.name))
                .with_note(a.name_span, "the other one is declared here")
                .with_help("names containing `/` can clash with the elements of a compound element; rename one");
            self.report(d);
        }
    }
}

/// `1 input`, `2 inputs`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Ports `0..=max` of a compound's `input` or `output`.
fn port_count(ports: &std::collections::BTreeSet<usize>) -> usize {
    ports.iter().next_back().map_or(0, |&p| p + 1)
}

/// The input and output port counts each entry of `body` uses.
fn used_ports(body: &Body) -> Vec<(usize, usize)> {
    let mut used = vec![(0, 0); body.elems.len()];
    for c in &body.conns {
        used[c.to].0 = used[c.to].0.max(c.to_port + 1);
        used[c.from].1 = used[c.from].1.max(c.from_port + 1);
    }
    used
}

/// Whether arguments fit a compound's parameters: keywords it knows are
/// optional, the others must match its positional parameters in number
/// (or exceed them with `__REST__`).
fn args_fit(class: &CompoundClass, args: &[Arg]) -> bool {
    let positional = class.formals.iter().filter(|f| f.keyword.is_none()).count();
    let rest = class
        .formals
        .iter()
        .any(|f| f.keyword.as_deref() == Some("__REST__"));
    let given = args
        .iter()
        .filter(|a| {
            let (keyword, _) = args::split_keyword(&a.text);
            !keyword.is_some_and(|k| {
                k != "__REST__"
                    && class
                        .formals
                        .iter()
                        .any(|f| f.keyword.as_deref() == Some(k))
            })
        })
        .count();
    given == positional || (rest && given > positional)
}
