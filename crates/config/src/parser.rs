//! Recursive-descent parser: statements into one [`Body`] per scope (the
//! file, and each `elementclass` body), before compound expansion.
//!
//! Class names are bound where they are used, as in Click: a compound
//! class is visible from its definition to the end of the enclosing scope,
//! and inside its own body its name still means whatever it meant before
//! (so `elementclass Queue { input -> Queue -> Counter -> output }` wraps
//! the primitive `Queue`). Compound recursion therefore cannot be written.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use crate::args;
use crate::lexer::{Lexer, Tok, Token, Unterminated};
use crate::library::{self, Libraries, Requirement};
use crate::source::{Diagnostic, SourceMap, Span, PREVIOUSLY_DECLARED};

/// Deepest `elementclass` nesting the parser accepts (it recurses).
pub(crate) const MAX_NESTING: usize = 64;

/// Most `||` alternatives of one element class.
const MAX_VARIANTS: usize = 1024;

/// Highest port number accepted.
pub(crate) const MAX_PORT: usize = 65535;

/// The end of an expandable port list, as in Click's `yport`.
const EXPANDABLE: isize = -1;

const KEYWORDS: [&str; 5] = [
    "elementclass",
    "require",
    "provide",
    "define",
    "connectiontunnel",
];

/// What a class name in a declaration resolved to.
#[derive(Clone, Debug)]
pub(crate) enum ClassRef {
    /// A class the element registry must know.
    Primitive(String),
    /// Index into [`Parsed::classes`].
    Compound(usize),
    /// The `input` pseudo-element of a compound body.
    Input,
    /// The `output` pseudo-element of a compound body.
    Output,
    /// An element group's input or output, or a `connectiontunnel`:
    /// connections pass through. The number is how many places it takes
    /// in anonymous numbering, as Click counts its tunnel elements.
    Tunnel(usize),
}

#[derive(Debug)]
pub(crate) struct LocalElem {
    /// The declared name, `None` for anonymous elements.
    pub declared: Option<String>,
    /// The name in this scope (declared or `Class@N`).
    pub name: String,
    pub class: ClassRef,
    /// The class name as written (a synonym stays a synonym here).
    pub class_written: String,
    pub class_span: Span,
    pub name_span: Span,
    /// Byte range of the raw text between the parentheses.
    pub config: Option<(usize, usize)>,
    pub config_span: Span,
    /// A bare identifier that named no element when it was read; if a
    /// declaration of that name follows, this entry becomes an alias.
    pub tentative: Option<String>,
    pub alias_of: Option<usize>,
}

impl LocalElem {
    /// The element as the user wrote it.
    fn shown(&self) -> &str {
        self.declared.as_deref().unwrap_or(&self.class_written)
    }
}

#[derive(Debug)]
pub(crate) struct LocalConn {
    pub from: usize,
    pub from_port: usize,
    pub to: usize,
    pub to_port: usize,
    pub span: Span,
}

/// `define($NAME value)`: the raw value's byte range.
#[derive(Debug)]
pub(crate) struct Define {
    pub name: String,
    pub value: (usize, usize),
    pub span: Span,
}

#[derive(Debug, Default)]
pub(crate) struct Body {
    pub elems: Vec<LocalElem>,
    pub conns: Vec<LocalConn>,
    pub defines: Vec<Define>,
    /// Declared names, to their entry.
    pub names: HashMap<String, usize>,
    /// Input ports the body forwards (`input[N] -> ...`).
    pub inputs: BTreeSet<usize>,
    /// Output ports the body feeds (`... -> [N]output`).
    pub outputs: BTreeSet<usize>,
    pub is_compound: bool,
}

#[derive(Debug)]
pub(crate) struct Formal {
    /// `KEYWORD` of `KEYWORD $var`.
    pub keyword: Option<String>,
    /// Variable name without `$`.
    pub var: String,
}

#[derive(Debug)]
pub(crate) struct CompoundClass {
    pub name: String,
    pub name_span: Span,
    pub formals: Vec<Formal>,
    pub body: Body,
    /// Lexical depth: 1 for a class defined at file level.
    pub depth: usize,
    /// Where this alternative starts (its `{` or `||`).
    pub variant_span: Span,
    /// The next alternative when this one does not fit an element's
    /// arguments and ports (`||`, or `...` for the earlier meaning).
    pub overload: Option<Binding>,
}

impl CompoundClass {
    /// The class name for messages; anonymous classes have none.
    pub fn shown(&self) -> &str {
        if self.name.is_empty() {
            "{ ... }"
        } else {
            &self.name
        }
    }
}

#[derive(Debug)]
pub(crate) struct Parsed {
    pub top: Body,
    pub classes: Vec<CompoundClass>,
    pub requirements: Vec<String>,
    pub provisions: Vec<String>,
    pub warnings: Vec<Diagnostic>,
}

#[derive(Clone, Debug)]
pub(crate) enum Binding {
    Primitive(String),
    Compound(usize),
}

/// One element of an element list in a connection.
struct Item {
    /// The entry connections into the element reach.
    id: usize,
    /// The entry connections out of it leave from (a group's output).
    out_id: usize,
    /// The element with its port lists.
    span: Span,
    /// The element alone.
    elem_span: Span,
    ins: Option<(Vec<isize>, Span)>,
    outs: Option<(Vec<isize>, Span)>,
}

/// A parse error already reported; the caller recovers.
struct Reported;

type PResult<T> = Result<T, Reported>;

pub(crate) struct Parser<'a> {
    text: &'a str,
    map: &'a SourceMap,
    libs: &'a Libraries,
    /// The files read so far (a library is read once).
    read_libs: HashSet<u32>,
    provisions: Vec<String>,
    warnings: Vec<Diagnostic>,
    lexer: Lexer<'a>,
    peeked: VecDeque<Token>,
    errors: Vec<Diagnostic>,
    classes: Vec<CompoundClass>,
    /// Visible class names: what each name means, innermost binding
    /// last. A map, not a list: a file may define many thousands of
    /// classes and every bare word is looked up.
    types: HashMap<String, Vec<Binding>>,
    /// The names bound so far, in order, so that leaving a scope can
    /// unbind what it bound.
    bound: Vec<String>,
    requirements: Vec<String>,
    /// Number of enclosing `elementclass` bodies.
    depth: usize,
    /// Set when the rest of the file is skipped.
    gave_up: bool,
    /// The end of the last token consumed.
    prev_end: usize,
    /// Number of enclosing element groups.
    groups: usize,
    /// Words used as element classes so far anywhere in the file (after
    /// `::`, before `(`, or bare and naming no element), as Click's
    /// lexers remember every class they were made to assume: a later
    /// element of that name is an error. Bounded by the file's words.
    used_classes: HashSet<String>,
}

pub(crate) fn parse<'a>(
    map: &'a SourceMap,
    file: u32,
    libs: &'a Libraries,
) -> Result<Parsed, Vec<Diagnostic>> {
    let text = map.get(file).map_or("", |s| s.text.as_str());
    let mut p = Parser {
        text,
        map,
        libs,
        read_libs: HashSet::from([file]),
        provisions: Vec::new(),
        warnings: Vec::new(),
        lexer: Lexer::new(text, file),
        peeked: VecDeque::new(),
        errors: Vec::new(),
        classes: Vec::new(),
        types: HashMap::new(),
        bound: Vec::new(),
        requirements: Vec::new(),
        depth: 0,
        gave_up: false,
        prev_end: 0,
        groups: 0,
        used_classes: HashSet::new(),
    };
    let mut top = Body::default();
    p.body(&mut top, None);
    p.finish_body(&mut top);
    let mut errors = std::mem::take(&mut p.lexer.errors);
    errors.append(&mut p.errors);
    if errors.is_empty() {
        Ok(Parsed {
            top,
            classes: p.classes,
            requirements: p.requirements,
            provisions: p.provisions,
            warnings: p.warnings,
        })
    } else {
        errors.sort_by_key(|d| (d.span.start, d.span.end));
        errors.dedup();
        Err(errors)
    }
}

fn describe(kind: Tok, text: &str) -> String {
    match kind {
        Tok::Eof => "end of file".to_string(),
        _ => format!("`{text}`"),
    }
}

impl<'a> Parser<'a> {
    fn span(&self, start: usize, end: usize) -> Span {
        self.lexer.span(start, end)
    }

    fn tspan(&self, t: Token) -> Span {
        self.span(t.start, t.end)
    }

    fn peek(&mut self) -> Token {
        self.peek_nth(0)
    }

    fn peek_nth(&mut self, n: usize) -> Token {
        while self.peeked.len() <= n {
            let t = self.lexer.next();
            self.peeked.push_back(t);
        }
        self.peeked[n]
    }

    fn bump(&mut self) -> Token {
        let t = self.peek();
        self.peeked.pop_front();
        self.prev_end = t.end;
        t
    }

    fn text_of(&self, t: Token) -> &'a str {
        &self.text[t.start..t.end]
    }

    fn is_keyword(&self, t: Token) -> bool {
        t.kind == Tok::Word && KEYWORDS.contains(&self.text_of(t))
    }

    fn error(&mut self, d: Diagnostic) {
        // An unterminated comment ends the file early; what the parser
        // then misses at the end of the file is no news.
        let at_eof = d.span.start >= self.text.len();
        if !at_eof || self.lexer.errors.is_empty() {
            self.errors.push(d);
        }
    }

    fn unexpected(&mut self, t: Token, expected: &str) -> Reported {
        let found = describe(t.kind, self.text_of(t));
        let mut d = Diagnostic::error(self.tspan(t), format!("expected {expected}, found {found}"));
        if t.kind == Tok::Other && self.text_of(t) == "#" {
            d = d.with_help("`#` starts a preprocessor line only in the first column; comments are `// ...` or `/* ... */`");
        }
        self.error(d);
        Reported
    }

    /// A token that cannot start a statement, in Click's words.
    fn unexpected_statement(&mut self, t: Token) -> Reported {
        let found = describe(t.kind, self.text_of(t));
        let mut d = Diagnostic::error(self.tspan(t), format!("syntax error near {found}"));
        d = if t.kind == Tok::Other && self.text_of(t) == "#" {
            d.with_help("`#` starts a preprocessor line only in the first column; comments are `// ...` or `/* ... */`")
        } else {
            d.with_help("expected a statement: a declaration, a connection, `elementclass`, `require` or `define`")
        };
        self.error(d);
        Reported
    }

    /// Reads the argument list whose `(` is the next token.
    fn config(&mut self) -> PResult<(usize, usize)> {
        let open = self.bump();
        debug_assert_eq!(open.kind, Tok::LParen);
        // Nothing past the `(` has been lexed: lookahead never crosses it.
        debug_assert!(self.peeked.is_empty());
        self.peeked.clear();
        match self.lexer.config(open.start) {
            Ok(range) => Ok(range),
            Err(Unterminated(d)) => {
                self.error(d);
                Err(Reported)
            }
        }
    }

    /// Skips to the end of the statement after an error: past `;`, or up
    /// to `}` or the end of the file.
    fn recover(&mut self) {
        loop {
            let t = self.peek();
            match t.kind {
                Tok::Eof | Tok::RBrace => return,
                Tok::Semi => {
                    self.bump();
                    return;
                }
                Tok::LParen => {
                    if self.config().is_err() {
                        return;
                    }
                }
                _ => {
                    self.bump();
                }
            }
        }
    }

    fn lookup_type(&self, name: &str) -> Option<&Binding> {
        self.types.get(name).and_then(|b| b.last())
    }

    /// Whether `name` is a class here: one in scope, or a word used as a
    /// class earlier in the file.
    fn is_class(&self, name: &str) -> bool {
        self.lookup_type(name).is_some() || self.used_classes.contains(name)
    }

    fn bind_type(&mut self, name: String, binding: Binding) {
        self.types.entry(name.clone()).or_default().push(binding);
        self.bound.push(name);
    }

    /// Forgets the bindings made after the first `len`.
    fn unbind_types(&mut self, len: usize) {
        while self.bound.len() > len {
            let Some(name) = self.bound.pop() else { break };
            if let Some(b) = self.types.get_mut(&name) {
                b.pop();
                if b.is_empty() {
                    self.types.remove(&name);
                }
            }
        }
    }

    fn resolve_class(&self, name: &str) -> ClassRef {
        match self.lookup_type(name) {
            Some(Binding::Compound(i)) => ClassRef::Compound(*i),
            Some(Binding::Primitive(p)) => ClassRef::Primitive(p.clone()),
            None => ClassRef::Primitive(name.to_string()),
        }
    }

    /// Statements up to `}` (not consumed) or the end of the file.
    fn body(&mut self, body: &mut Body, open: Option<Token>) {
        loop {
            let t = self.peek();
            let word = self.text_of(t);
            match t.kind {
                Tok::Eof => {
                    if let (Some(open), false) = (open, self.gave_up) {
                        let d = if open.kind == Tok::LParen {
                            Diagnostic::error(self.tspan(open), "unterminated element group")
                                .with_help("this `(` has no matching `)`")
                        } else {
                            Diagnostic::error(self.tspan(open), "unterminated element class body")
                                .with_help("this `{` has no matching `}`")
                        };
                        self.error(d);
                    }
                    return;
                }
                Tok::RBrace if open.is_some_and(|o| o.kind == Tok::LBrace) => return,
                Tok::RParen if open.is_some_and(|o| o.kind == Tok::LParen) => return,
                Tok::Arrow | Tok::Arrow2 if self.nested(body) => self.connection(body),
                Tok::Semi => {
                    self.bump();
                }
                Tok::Word if word == "elementclass" => self.elementclass(),
                Tok::Word if word == "require" => self.require(body),
                Tok::Word if word == "provide" => self.provide(),
                Tok::Word if word == "define" => self.define(body),
                Tok::Word if word == "connectiontunnel" => self.connection_tunnel(body),
                Tok::Word | Tok::LBracket | Tok::LBrace | Tok::LParen => self.connection(body),
                Tok::Bar2 if open.is_some_and(|o| o.kind == Tok::LBrace) => return,
                Tok::Dots if open.is_some() => {
                    let d = Diagnostic::error(
                        self.tspan(t),
                        "`...` should occur last, after one or more compounds",
                    )
                    .with_help(
                        "write `elementclass X { ... || ... }` with `...` as the last alternative",
                    );
                    self.error(d);
                    self.bump();
                }
                _ => {
                    self.unexpected_statement(t);
                    self.bump();
                    self.recover();
                }
            }
        }
    }

    /// A port list `[N]`, `[N, M, ...]`, `[]` or `[N, ...,]`, if present,
    /// as Click's `yport` reads it: a list that ends with `,]`, and `[]`,
    /// is expandable (`EXPANDABLE` after the last port; `[]` starts at 0).
    fn ports(&mut self) -> PResult<Option<(Vec<isize>, Span)>> {
        let open = self.peek();
        if open.kind != Tok::LBracket {
            return Ok(None);
        }
        self.bump();
        let mut ports: Vec<isize> = Vec::new();
        loop {
            let num = self.peek();
            match num.kind {
                Tok::Word if self.text_of(num).bytes().all(|c| c.is_ascii_digit()) => {
                    self.bump();
                    let value = match self.text_of(num).parse::<usize>() {
                        Ok(v) if v <= MAX_PORT => v,
                        _ => {
                            let d = Diagnostic::error(
                                self.tspan(num),
                                format!("port number `{}` is too large", self.text_of(num)),
                            )
                            .with_help(format!("ports are numbered from 0 to {MAX_PORT}"));
                            self.error(d);
                            0
                        }
                    };
                    if ports.len() >= MAX_PORT {
                        let d = Diagnostic::error(self.tspan(num), "port list too long");
                        self.error(d);
                        return Err(Reported);
                    }
                    ports.push(value as isize);
                }
                Tok::RBracket => {
                    self.bump();
                    if ports.is_empty() {
                        ports.push(0);
                    }
                    ports.push(EXPANDABLE);
                    return Ok(Some((ports, self.span(open.start, num.end))));
                }
                _ => {
                    let d = Diagnostic::error(
                        self.tspan(num),
                        format!(
                            "expected a port number, found {}",
                            describe(num.kind, self.text_of(num))
                        ),
                    )
                    .with_help("ports are written `[0]`, `[1]`, or as lists `[0, 1]`");
                    self.error(d);
                    return Err(Reported);
                }
            }
            let close = self.peek();
            match close.kind {
                Tok::RBracket => {
                    self.bump();
                    return Ok(Some((ports, self.span(open.start, close.end))));
                }
                Tok::Comma => {
                    self.bump();
                }
                _ => return Err(self.unexpected(close, "`,` or `]`")),
            }
        }
    }

    /// `[p] elem [p] -> [p] elem [p] -> ...`
    fn connection(&mut self, body: &mut Body) {
        if self.connection_inner(body).is_err() {
            self.recover();
        }
    }

    /// One element of an element list, with its port lists.
    fn item(&mut self, body: &mut Body, first_set: bool) -> PResult<Option<Item>> {
        let in_ports = self.ports()?;
        if self.peek().kind == Tok::LParen {
            return self.group(body, in_ports).map(Some);
        }
        let Some((id, elem_span)) = self.element(body)? else {
            // Inside a compound or group, Click reads `-> x` as
            // `input -> x` and `x ->` at the end as `x -> output`, the
            // ports written there being the pseudo-element's.
            let t = self.peek();
            if self.nested(body) {
                let here = in_ports
                    .as_ref()
                    .map_or(self.span(t.start, t.start), |(_, s)| *s);
                let arrow = matches!(t.kind, Tok::Arrow | Tok::Arrow2);
                let ends = matches!(
                    t.kind,
                    Tok::Semi | Tok::RBrace | Tok::RParen | Tok::Eof | Tok::Bar2
                );
                if first_set && arrow {
                    if let Some(&input) = body.names.get("input") {
                        return Ok(Some(Item {
                            id: input,
                            out_id: input,
                            span: here,
                            elem_span: here,
                            ins: None,
                            outs: in_ports,
                        }));
                    }
                } else if !first_set && ends {
                    if let Some(&output) = body.names.get("output") {
                        return Ok(Some(Item {
                            id: output,
                            out_id: output,
                            span: here,
                            elem_span: here,
                            ins: in_ports,
                            outs: None,
                        }));
                    }
                }
            }
            if let Some((_, span)) = in_ports {
                let found = describe(t.kind, self.text_of(t));
                let d = Diagnostic::error(
                    span,
                    format!("expected an element after this port, found {found}"),
                );
                self.error(d);
                return Err(Reported);
            }
            return Ok(None);
        };
        let out_ports = self.ports()?;
        let mut span = in_ports
            .as_ref()
            .map_or(elem_span, |(_, s)| s.to(elem_span));
        if let Some((_, s)) = &out_ports {
            span = span.to(*s);
        }
        Ok(Some(Item {
            id,
            out_id: id,
            span,
            elem_span,
            ins: in_ports,
            outs: out_ports,
        }))
    }

    /// Whether `input` and `output` mean something here.
    fn nested(&self, body: &Body) -> bool {
        body.is_compound || self.groups > 0
    }

    /// An element group `( ... )`, as Click's `ygroup`: its statements
    /// belong to the enclosing scope, `input` and `output` inside are the
    /// group's ports, and without port lists of its own the group offers
    /// every port its body uses.
    fn group(&mut self, body: &mut Body, in_ports: Option<(Vec<isize>, Span)>) -> PResult<Item> {
        let open = self.bump();
        if self.groups >= MAX_NESTING {
            let d = Diagnostic::error(
                self.tspan(open),
                format!("element groups nested more than {MAX_NESTING} deep"),
            );
            self.error(d);
            self.gave_up = true;
            self.peeked.clear();
            self.lexer.seek(self.text.len());
            return Err(Reported);
        }
        let open_span = self.tspan(open);
        let tunnel = |body: &mut Body, word: &str| {
            body.elems.push(LocalElem {
                declared: None,
                name: format!("<group {word}>"),
                class: ClassRef::Tunnel(if word == "input" { 2 } else { 1 }),
                class_written: String::new(),
                class_span: open_span,
                name_span: open_span,
                config: None,
                config_span: open_span,
                tentative: None,
                alias_of: None,
            });
            body.elems.len() - 1
        };
        let input = tunnel(body, "input");
        let output = tunnel(body, "output");
        let saved = [
            body.names.insert("input".to_string(), input),
            body.names.insert("output".to_string(), output),
        ];
        let conns_before = body.conns.len();
        self.groups += 1;
        self.body(body, Some(open));
        self.groups -= 1;
        for (word, old) in ["input", "output"].into_iter().zip(saved) {
            match old {
                Some(id) => body.names.insert(word.to_string(), id),
                None => body.names.remove(word),
            };
        }
        let close = self.peek();
        let end = if close.kind == Tok::RParen {
            self.bump();
            close.end
        } else {
            return Err(Reported);
        };
        let (mut nin, mut nout) = (0usize, 0usize);
        for c in &body.conns[conns_before..] {
            if c.from == input {
                nin = nin.max(c.from_port + 1);
            }
            if c.to == output {
                nout = nout.max(c.to_port + 1);
            }
        }
        let elem_span = self.span(open.start, end);
        let implied = |n: usize| (n > 0).then(|| ((0..n as isize).collect::<Vec<_>>(), elem_span));
        let ins = in_ports.or_else(|| implied(nin));
        let outs = match self.ports()? {
            Some(p) => Some(p),
            None => implied(nout),
        };
        Ok(Item {
            id: input,
            out_id: output,
            span: elem_span,
            elem_span,
            ins,
            outs,
        })
    }

    /// `item ( "," item )*`; `None` if nothing here starts an element.
    fn element_set(&mut self, body: &mut Body, first_set: bool) -> PResult<Option<Vec<Item>>> {
        let Some(first) = self.item(body, first_set)? else {
            return Ok(None);
        };
        let mut items = vec![first];
        while self.peek().kind == Tok::Comma {
            let comma = self.bump();
            match self.item(body, first_set)? {
                Some(item) => items.push(item),
                None => {
                    let t = self.peek();
                    let found = describe(t.kind, self.text_of(t));
                    let d = Diagnostic::error(
                        self.tspan(comma),
                        format!("expected an element after `,`, found {found}"),
                    );
                    self.error(d);
                    return Err(Reported);
                }
            }
        }
        Ok(Some(items))
    }

    fn connection_inner(&mut self, body: &mut Body) -> PResult<()> {
        // The previous element list and the connector after it.
        let mut prev: Option<(Vec<Item>, Token)> = None;
        loop {
            let Some(set) = self.element_set(body, prev.is_none())? else {
                let t = self.peek();
                if t.kind == Tok::Eof && !self.lexer.errors.is_empty() {
                    return Err(Reported);
                }
                let found = describe(t.kind, self.text_of(t));
                let d = match &prev {
                    Some((_, arrow)) => Diagnostic::error(
                        self.tspan(*arrow),
                        format!(
                            "expected an element after `{}`, found {found}",
                            self.text_of(*arrow)
                        ),
                    )
                    .with_help(format!(
                        "remove the `{}` or name the element it leads to",
                        self.text_of(*arrow)
                    )),
                    None => Diagnostic::error(
                        self.tspan(t),
                        format!("expected an element, found {found}"),
                    ),
                };
                self.error(d);
                return Err(Reported);
            };
            match &prev {
                Some((from, arrow)) => {
                    let arrow = *arrow;
                    self.connect_all(body, from, &set, arrow);
                }
                None => {
                    for item in &set {
                        if let Some((ports, span)) = &item.ins {
                            let n = ports[0];
                            let d =
                                Diagnostic::error(*span, "input ports ignored at start of chain")
                                    .with_help(format!(
                                        "connect something to it: `x -> [{n}]{}`",
                                        body.elems[item.id].shown()
                                    ));
                            self.error(d);
                            break;
                        }
                    }
                }
            }
            let t = self.peek();
            match t.kind {
                Tok::Arrow | Tok::Arrow2 => {
                    self.bump();
                    prev = Some((set, t));
                    continue;
                }
                Tok::Semi
                | Tok::Word
                | Tok::RBrace
                | Tok::RParen
                | Tok::LParen
                | Tok::Eof
                | Tok::LBrace
                | Tok::LBracket
                | Tok::Bar2
                | Tok::Dots => {
                    if t.kind == Tok::Semi {
                        self.bump();
                    }
                    if prev.is_none() {
                        self.spread_declaration(body, &set);
                    }
                    for item in &set {
                        if let Some((ports, span)) = &item.outs {
                            let n = ports[0];
                            let d =
                                Diagnostic::error(*span, "output ports ignored at end of chain")
                                    .with_help(format!(
                                        "connect it to something: `{}[{n}] -> x`",
                                        body.elems[item.id].shown()
                                    ));
                            self.error(d);
                            break;
                        }
                    }
                    return Ok(());
                }
                Tok::Colon2 => {
                    let d = Diagnostic::error(self.tspan(t), "unexpected `::` in a connection")
                        .with_help(
                            "declarations are `name :: Class(args)` or `a, b :: Class(args)`",
                        );
                    self.error(d);
                    return Err(Reported);
                }
                _ => return Err(self.unexpected(t, "`->`, `=>` or `;`")),
            }
        }
    }

    /// `a, b, c :: Class(args)` alone in a statement declares every name
    /// with the class and arguments of the last, as Click's
    /// `yelement_next` spreads them.
    fn spread_declaration(&mut self, body: &mut Body, set: &[Item]) {
        if set.len() < 2 || set.iter().any(|i| i.ins.is_some() || i.outs.is_some()) {
            return;
        }
        let last = &body.elems[set[set.len() - 1].id];
        if last.declared.is_none() || last.class_span == last.name_span {
            return;
        }
        let bare = set[..set.len() - 1]
            .iter()
            .all(|i| body.elems[i.id].tentative.is_some() && body.elems[i.id].config.is_none());
        if !bare {
            return;
        }
        let last_id = set[set.len() - 1].id;
        let (class, class_written, class_span, config, config_span) = {
            let l = &body.elems[last_id];
            (
                l.class.clone(),
                l.class_written.clone(),
                l.class_span,
                l.config,
                l.config_span,
            )
        };
        for item in &set[..set.len() - 1] {
            let word = body.elems[item.id].tentative.clone().unwrap_or_default();
            if let Some(&prev) = body.names.get(&word) {
                let d = Diagnostic::error(
                    body.elems[item.id].name_span,
                    format!("redeclaration of element `{word}`"),
                )
                .with_note(
                    body.elems[prev].name_span,
                    format!("element `{word}` {PREVIOUSLY_DECLARED}"),
                );
                self.error(d);
                continue;
            }
            if self.is_class(&word) {
                let d = Diagnostic::error(
                    body.elems[item.id].name_span,
                    format!("class `{word}` used as element name"),
                )
                .with_help("choose another name for the element");
                self.error(d);
                continue;
            }
            let e = &mut body.elems[item.id];
            e.declared = Some(word.clone());
            e.name = word.clone();
            e.class = class.clone();
            e.class_written = class_written.clone();
            e.class_span = class_span;
            e.config = config;
            e.config_span = config_span;
            e.tentative = None;
            body.names.insert(word, item.id);
        }
    }

    /// Connects two element lists as Click's `yconnection_connect_all`
    /// does: port lists pair up in order; a single port on one side meets
    /// every port of the other; an expandable list (`[]`, `[N,]`, or, with
    /// `=>`, no ports at all) grows to match.
    fn connect_all(&mut self, body: &mut Body, outputs: &[Item], inputs: &[Item], arrow: Token) {
        let double = arrow.kind == Tok::Arrow2;
        let ports_of = |item: &Item, out: bool| -> Vec<isize> {
            let p = if out { &item.outs } else { &item.ins };
            p.as_ref().map(|(v, _)| v.clone()).unwrap_or_default()
        };
        let lists: [Vec<Vec<isize>>; 2] = [
            inputs.iter().map(|i| ports_of(i, false)).collect(),
            outputs.iter().map(|i| ports_of(i, true)).collect(),
        ];
        let mut minp = [0usize; 2];
        let mut expandable = [0usize; 2];
        for k in 0..2 {
            for p in &lists[k] {
                let n = p.len();
                if n <= 1 {
                    minp[k] += 1;
                } else if p[n - 1] == EXPANDABLE {
                    minp[k] += n - 1;
                    expandable[k] += 1;
                } else {
                    minp[k] += n;
                }
            }
        }
        let whole = self.span(outputs[0].span.start, inputs[inputs.len() - 1].span.end);
        if expandable[0] + expandable[1] > 1 {
            let d = Diagnostic::error(whole, "at most one expandable port allowed per connection");
            self.error(d);
            let k = usize::from(minp[0] < minp[1]);
            expandable[k] = 0;
        }
        if double {
            // `=>` reads a missing port list as expandable.
            for k in 0..2 {
                if minp[k] == 1 && minp[1 - k] > 1 && lists[k][0].is_empty() {
                    expandable[k] = 1;
                }
            }
        }
        let mut step = [false; 2];
        let mut nexpandable = [0usize; 2];
        for k in 0..2 {
            step[k] = minp[k] > 1 || expandable[k] > 0;
            nexpandable[k] = if expandable[k] > 0 {
                minp[1 - k].saturating_sub(minp[k])
            } else {
                0
            };
        }
        if step[0] && step[1] {
            let message = if !double {
                Some("syntax error: many-to-many connections require `=>`".to_string())
            } else if expandable[0] == 0 && expandable[1] == 0 && minp[0] != minp[1] {
                Some(format!(
                    "connection mismatch: {} outputs connected to {} inputs",
                    minp[1], minp[0]
                ))
            } else if expandable[0] == 0 && minp[0] < minp[1] {
                Some(format!(
                    "connection mismatch: {} or more outputs connected to {} inputs",
                    minp[1], minp[0]
                ))
            } else if expandable[1] == 0 && minp[1] < minp[0] {
                Some(format!(
                    "connection mismatch: {} outputs connected to {} or more inputs",
                    minp[1], minp[0]
                ))
            } else {
                None
            };
            if let Some(message) = message {
                let mut d = Diagnostic::error(self.tspan(arrow), message)
                    .with_note(whole, "in this connection");
                if !double {
                    d = d.with_help("write `=>` to connect the ports pairwise");
                }
                self.error(d);
            }
        } else if !step[0] && !step[1] {
            step[0] = true;
        }
        let items = [inputs, outputs];
        let mut it = [0usize; 2];
        let mut ppos = [0usize; 2];
        let mut port: [isize; 2] = [-1, -1];
        let mut guard = 0usize;
        while it[0] < inputs.len() && it[1] < outputs.len() {
            guard += 1;
            if guard > 2 * MAX_PORT * (inputs.len() + outputs.len()) {
                break;
            }
            for k in 0..2 {
                if port[k] < 0 {
                    let p = &lists[k][it[k]];
                    port[k] = if p.is_empty() { 0 } else { p[0] };
                }
            }
            let from = &items[1][it[1]];
            let to = &items[0][it[0]];
            let from_span = from
                .outs
                .as_ref()
                .map_or(from.elem_span, |(_, s)| from.elem_span.to(*s));
            let to_span = to
                .ins
                .as_ref()
                .map_or(to.elem_span, |(_, s)| s.to(to.elem_span));
            let span = from_span.to(to_span);
            self.connect(
                body,
                (from.out_id, port[1] as usize, from.elem_span),
                (to.id, port[0] as usize, to.elem_span),
                span,
            );
            for k in 0..2 {
                if !step[k] {
                    continue;
                }
                let p = &lists[k][it[k]];
                let np = p.len();
                ppos[k] += 1;
                if ppos[k] < np && p[ppos[k]] >= 0 {
                    port[k] = p[ppos[k]];
                } else if np >= 2 && p[np - 1] == EXPANDABLE && nexpandable[k] > 0 {
                    port[k] = p[np - 2] + (ppos[k] as isize) - (np as isize - 2);
                    nexpandable[k] -= 1;
                } else if np == 0 && minp[k] == 1 && nexpandable[k] > 0 {
                    port[k] = ppos[k] as isize;
                    nexpandable[k] -= 1;
                } else {
                    port[k] = -1;
                    ppos[k] = 0;
                    it[k] += 1;
                }
            }
        }
    }

    /// Records `from[port] -> [port]to`; each end is (entry, port, span
    /// of the element where it is used).
    fn connect(
        &mut self,
        body: &mut Body,
        (from, from_port, from_span): (usize, usize, Span),
        (to, to_port, to_span): (usize, usize, Span),
        span: Span,
    ) {
        let mut ok = true;
        if matches!(body.elems[to].class, ClassRef::Input) {
            let d = Diagnostic::error(to_span, "`input` cannot receive connections")
                .with_help("inside an element class, `input[N] -> x` passes the compound's input port N to `x`");
            self.error(d);
            ok = false;
        }
        if matches!(body.elems[from].class, ClassRef::Output) {
            let d = Diagnostic::error(from_span, "`output` cannot send connections")
                .with_help("inside an element class, `x -> [N]output` passes `x` to the compound's output port N");
            self.error(d);
            ok = false;
        }
        if !ok {
            return;
        }
        if matches!(body.elems[from].class, ClassRef::Input) {
            body.inputs.insert(from_port);
        }
        if matches!(body.elems[to].class, ClassRef::Output) {
            body.outputs.insert(to_port);
        }
        body.conns.push(LocalConn {
            from,
            from_port,
            to,
            to_port,
            span,
        });
    }

    /// One element in a chain: a reference, an anonymous element, or a
    /// declaration. Returns its entry and span, or `None` if the next token
    /// cannot start an element.
    fn element(&mut self, body: &mut Body) -> PResult<Option<(usize, Span)>> {
        let t = self.peek();
        if t.kind == Tok::LBrace {
            // An anonymous compound: Click names it `@N`.
            let Some(class) = self.compound(String::new(), self.tspan(t)) else {
                return Err(Reported);
            };
            let end = self.prev_end;
            let (config, end) = if self.peek().kind == Tok::LParen {
                let c = self.config()?;
                (Some(c), c.1 + 1)
            } else {
                (None, end)
            };
            let span = self.span(t.start, end);
            let id = self.add_anonymous(body, "", self.span(t.start, t.end), config, None);
            body.elems[id].class = ClassRef::Compound(class);
            return Ok(Some((id, span)));
        }
        if t.kind != Tok::Word || self.is_keyword(t) {
            return Ok(None);
        }
        self.bump();
        let word = self.text_of(t);
        let span = self.tspan(t);
        let next = self.peek();
        let declaring = next.kind == Tok::Colon2;
        if !declaring && word.bytes().all(|c| c.is_ascii_digit()) {
            let d = Diagnostic::error(span, format!("expected an element, found number `{word}`"))
                .with_help("ports go in brackets: `a[1] -> [0]b`");
            self.error(d);
            return Err(Reported);
        }
        match next.kind {
            Tok::LParen => {
                let config = self.config()?;
                let end = config.1 + 1;
                if self.lookup_type(word).is_none() && body.names.contains_key(word) {
                    let d = Diagnostic::error(
                        self.span(config.0 - 1, end),
                        "configuration string ignored on element reference",
                    )
                    .with_help(format!(
                        "`{word}` is an element declared elsewhere; give arguments where it is declared"
                    ));
                    self.error(d);
                    return Err(Reported);
                }
                let id = self.add_anonymous(body, word, span, Some(config), None);
                Ok(Some((id, span.to(self.span(span.start, end)))))
            }
            Tok::Colon2 => self.declaration(body, t).map(Some),
            _ => {
                // Click's rule: a class name makes an anonymous element;
                // otherwise a declared name is that element; otherwise the
                // word is taken as a class.
                if self.lookup_type(word).is_some() {
                    return Ok(Some((
                        self.add_anonymous(body, word, span, None, None),
                        span,
                    )));
                }
                if let Some(&id) = body.names.get(word) {
                    return Ok(Some((id, span)));
                }
                let id = self.add_anonymous(body, word, span, None, Some(word.to_string()));
                Ok(Some((id, span)))
            }
        }
    }

    fn add_anonymous(
        &mut self,
        body: &mut Body,
        class: &str,
        span: Span,
        config: Option<(usize, usize)>,
        tentative: Option<String>,
    ) -> usize {
        let config_span = match config {
            Some((s, e)) => self.span(s, e),
            None => self.span(span.end, span.end),
        };
        if tentative.is_none() && !class.is_empty() {
            self.used_classes.insert(class.to_string());
        }
        body.elems.push(LocalElem {
            declared: None,
            name: String::new(),
            class: self.resolve_class(class),
            class_written: class.to_string(),
            class_span: span,
            name_span: span,
            config,
            config_span,
            tentative,
            alias_of: None,
        });
        body.elems.len() - 1
    }

    /// `a, b :: Class(args)`; `first` is the first name, already read.
    fn declaration(&mut self, body: &mut Body, first: Token) -> PResult<(usize, Span)> {
        let mut names = vec![first];
        loop {
            let t = self.bump();
            match t.kind {
                Tok::Comma => {
                    let n = self.peek();
                    if n.kind != Tok::Word || self.is_keyword(n) {
                        return Err(self.unexpected(n, "an element name after `,`"));
                    }
                    names.push(self.bump());
                }
                Tok::Colon2 => break,
                _ => return Err(self.unexpected(t, "`::` after the element names")),
            }
        }
        let class = self.peek();
        let mut anonymous_class = None;
        if class.kind == Tok::LBrace {
            let Some(k) = self.compound(String::new(), self.tspan(class)) else {
                return Err(Reported);
            };
            anonymous_class = Some(k);
        } else if class.kind != Tok::Word || self.is_keyword(class) {
            return Err(self.unexpected(class, "an element class after `::`"));
        } else {
            self.bump();
        }
        let class_name = if anonymous_class.is_some() {
            ""
        } else {
            self.text_of(class)
        };
        let class_span = self.tspan(class);
        let class_end = if anonymous_class.is_some() {
            self.prev_end
        } else {
            class.end
        };
        let (config, end) = if self.peek().kind == Tok::LParen {
            let c = self.config()?;
            (Some(c), c.1 + 1)
        } else {
            (None, class_end)
        };
        let config_span = match config {
            Some((s, e)) => self.span(s, e),
            None => self.span(class_end, class_end),
        };
        let class_ref = match anonymous_class {
            Some(k) => ClassRef::Compound(k),
            None => self.resolve_class(class_name),
        };
        let mut first_id = None;
        for name in names {
            let word = self.text_of(name);
            let name_span = self.tspan(name);
            if let Some(&prev) = body.names.get(word) {
                first_id.get_or_insert(prev);
                let mut d =
                    Diagnostic::error(name_span, format!("redeclaration of element `{word}`"));
                d = if matches!(body.elems[prev].class, ClassRef::Input | ClassRef::Output) {
                    d.with_help(format!("inside an element class, `{word}` is the compound's own {word} ports; choose another name"))
                } else {
                    d.with_note(
                        body.elems[prev].name_span,
                        format!("element `{word}` {PREVIOUSLY_DECLARED}"),
                    )
                };
                self.error(d);
                continue;
            }
            if word
                .split('/')
                .any(|part| part.bytes().all(|c| c.is_ascii_digit()))
            {
                let d = Diagnostic::error(
                    name_span,
                    format!("element name `{word}` has an all-digit component"),
                )
                .with_help("element names need a letter, `_` or `@` between slashes");
                self.error(d);
            }
            if self.is_class(word) || word == class_name {
                let d =
                    Diagnostic::error(name_span, format!("class `{word}` used as element name"))
                        .with_help("choose another name for the element");
                self.error(d);
            }
            body.elems.push(LocalElem {
                declared: Some(word.to_string()),
                name: word.to_string(),
                class: class_ref.clone(),
                class_written: class_name.to_string(),
                class_span,
                name_span,
                config,
                config_span,
                tentative: None,
                alias_of: None,
            });
            let id = body.elems.len() - 1;
            body.names.insert(word.to_string(), id);
            first_id.get_or_insert(id);
        }
        if !class_name.is_empty() {
            self.used_classes.insert(class_name.to_string());
        }
        let id = first_id.expect("a declaration has at least one name");
        Ok((id, self.span(first.start, end)))
    }

    /// `elementclass Name { ... }` or `elementclass Name Existing`.
    fn elementclass(&mut self) {
        let kw = self.bump();
        let name = self.peek();
        if name.kind != Tok::Word || self.is_keyword(name) {
            self.unexpected(name, "an element class name after `elementclass`");
            self.recover();
            return;
        }
        self.bump();
        let word = self.text_of(name).to_string();
        let next = self.peek();
        match next.kind {
            Tok::LBrace => {
                if let Some(index) = self.compound(word.clone(), self.tspan(name)) {
                    self.bind_type(word, Binding::Compound(index));
                }
            }
            Tok::Word if !self.is_keyword(next) => {
                self.bump();
                let target = self.text_of(next);
                let binding = self
                    .lookup_type(target)
                    .cloned()
                    .unwrap_or_else(|| Binding::Primitive(target.to_string()));
                self.bind_type(word, binding);
            }
            _ => {
                let d = Diagnostic::error(
                    self.tspan(next),
                    format!(
                        "expected `{{` or an existing class name after `elementclass {word}`, found {}",
                        describe(next.kind, self.text_of(next))
                    ),
                )
                .with_note(self.tspan(kw), "element class definition starts here");
                self.error(d);
                self.recover();
            }
        }
    }

    /// A compound class body `{ ... }`, or several separated by `||`
    /// (overloads, chosen at expansion by arguments and ports as Click's
    /// `Compound::resolve` does), the last of which may be `...` (the
    /// class's earlier meaning). Returns the first variant; the caller
    /// binds the name.
    fn compound(&mut self, name: String, name_span: Span) -> Option<usize> {
        let open = self.bump();
        if self.depth >= MAX_NESTING {
            let d = Diagnostic::error(
                self.tspan(open),
                format!("element classes nested more than {MAX_NESTING} deep"),
            );
            self.error(d);
            // Skip the rest: the nesting is unreasonable.
            self.gave_up = true;
            self.peeked.clear();
            self.lexer.seek(self.text.len());
            return None;
        }
        let mut first: Option<usize> = None;
        let mut last: Option<usize> = None;
        // The `{` or `||` before the alternative being read.
        let mut starts = open;
        let mut variants = 0usize;
        loop {
            let t = self.peek();
            if t.kind == Tok::Dots {
                self.bump();
                let earlier = if name.is_empty() {
                    None
                } else {
                    Some(
                        self.lookup_type(&name)
                            .cloned()
                            .unwrap_or_else(|| Binding::Primitive(name.clone())),
                    )
                };
                let after = self.peek();
                match (earlier, last) {
                    (Some(b), Some(l)) if after.kind == Tok::RBrace => {
                        self.classes[l].overload = Some(b);
                    }
                    (None, _) => {
                        let d = Diagnostic::error(self.tspan(t), "cannot extend unknown element class")
                            .with_help("`...` stands for the earlier meaning of the class being defined; an anonymous class has none");
                        self.error(d);
                    }
                    _ => {
                        let d = Diagnostic::error(
                            self.tspan(t),
                            "`...` should occur last, after one or more compounds",
                        )
                        .with_help("write `elementclass X { ... || ... }` with `...` as the last alternative");
                        self.error(d);
                    }
                }
                if after.kind != Tok::RBrace {
                    let mut scratch = Body::default();
                    self.depth += 1;
                    self.body(&mut scratch, Some(open));
                    self.depth -= 1;
                }
                break;
            }
            variants += 1;
            if variants > MAX_VARIANTS {
                let d = Diagnostic::error(
                    self.tspan(t),
                    format!("more than {MAX_VARIANTS} overloads of one element class"),
                );
                self.error(d);
                self.gave_up = true;
                self.peeked.clear();
                self.lexer.seek(self.text.len());
                return None;
            }
            let index = self.compound_variant(&name, name_span, open, self.tspan(starts));
            if let Some(l) = last {
                self.classes[l].overload = Some(Binding::Compound(index));
            }
            first.get_or_insert(index);
            last = Some(index);
            if self.peek().kind == Tok::Bar2 {
                starts = self.bump();
                continue;
            }
            break;
        }
        if self.peek().kind == Tok::RBrace {
            let close = self.bump();
            self.prev_end = close.end;
        }
        first
    }

    /// One alternative of a compound class, up to `}` or `||` (not
    /// consumed).
    fn compound_variant(
        &mut self,
        name: &str,
        name_span: Span,
        open: Token,
        variant_span: Span,
    ) -> usize {
        self.depth += 1;
        let types_len = self.bound.len();
        let formals = self.formals();
        let mut body = Body {
            is_compound: true,
            ..Body::default()
        };
        let open_span = self.tspan(open);
        for (word, class) in [("input", ClassRef::Input), ("output", ClassRef::Output)] {
            body.elems.push(LocalElem {
                declared: Some(word.to_string()),
                name: word.to_string(),
                class,
                class_written: word.to_string(),
                class_span: open_span,
                name_span: open_span,
                config: None,
                config_span: open_span,
                tentative: None,
                alias_of: None,
            });
            body.names.insert(word.to_string(), body.elems.len() - 1);
        }
        self.body(&mut body, Some(open));
        self.unbind_types(types_len);
        self.depth -= 1;
        self.finish_body(&mut body);
        self.classes.push(CompoundClass {
            name: name.to_string(),
            name_span,
            formals,
            body,
            depth: self.depth + 1,
            variant_span,
            overload: None,
        });
        self.classes.len() - 1
    }

    /// `$a, $b, KEYWORD $c |` at the start of a compound body.
    fn formals(&mut self) -> Vec<Formal> {
        let mut formals: Vec<Formal> = Vec::new();
        let mut seen: HashMap<String, Span> = HashMap::new();
        loop {
            let t = self.peek();
            let (keyword, var) = match t.kind {
                Tok::Var => {
                    self.bump();
                    (None, t)
                }
                Tok::Word if self.peek_nth(1).kind == Tok::Var => {
                    self.bump();
                    (Some(self.text_of(t).to_string()), self.bump())
                }
                Tok::Bar => {
                    self.bump();
                    return formals;
                }
                _ => {
                    if !formals.is_empty() {
                        self.unexpected(t, "a parameter `$name` or `|`");
                    }
                    return formals;
                }
            };
            let name = self.text_of(var)[1..].to_string();
            let span = self.tspan(var);
            if let Some(prev) = seen.insert(name.clone(), span) {
                let d = Diagnostic::error(span, format!("parameter `${name}` declared twice"))
                    .with_note(prev, "first declared here");
                self.error(d);
            }
            formals.push(Formal { keyword, var: name });
            let sep = self.peek();
            match sep.kind {
                Tok::Comma => {
                    self.bump();
                }
                Tok::Bar => {
                    self.bump();
                    return formals;
                }
                _ => {
                    self.unexpected(sep, "`,` or `|` after a parameter");
                    return formals;
                }
            }
        }
    }

    /// `require(...)`: `library FILE` reads the library there (at file
    /// scope only, once per configuration); `package NAME` (or a single
    /// word) is recorded with a warning, since bricks has no packages;
    /// anything else is recorded.
    fn require(&mut self, body: &mut Body) {
        self.bump();
        if self.peek().kind != Tok::LParen {
            let t = self.peek();
            self.unexpected(t, "`(` after `require`");
            self.recover();
            return;
        }
        let Ok((s, e)) = self.config() else {
            return;
        };
        let raw = &self.text[s..e];
        for (a, b) in args::split_top(raw) {
            let p = args::process(&raw[a..b], None);
            let Some((cs, ce)) = p.content else {
                continue;
            };
            let span = self.span(s + a + cs, s + a + ce);
            match library::classify(&p.text) {
                Requirement::Library(name) => {
                    if self.depth > 0 {
                        let d =
                            Diagnostic::error(span, "`require library` must be used at file scope")
                                .with_help("move the `require` out of the element class");
                        self.error(d);
                        continue;
                    }
                    let key = (span.file, span.start);
                    if let Some(&file) = self.libs.loaded.get(&key) {
                        self.read_library(body, file);
                    }
                    // Otherwise loading it failed, and was reported.
                    let _ = name;
                }
                Requirement::Package(name) => {
                    self.warnings.push(
                        Diagnostic::error(span, format!("package `{name}` is not available; the requirement is ignored"))
                            .with_help("bricks has no element packages: every element class it knows is built in"),
                    );
                    self.requirements.push(p.text);
                }
                Requirement::Other => self.requirements.push(p.text),
            }
        }
    }

    /// Parses library `file` at file scope into `body`.
    fn read_library(&mut self, body: &mut Body, file: u32) {
        if !self.read_libs.insert(file) {
            return;
        }
        let Some(src) = self.map.get(file) else {
            return;
        };
        let text: &'a str = src.text.as_str();
        let saved_text = std::mem::replace(&mut self.text, text);
        let saved_lexer = std::mem::replace(&mut self.lexer, Lexer::new(text, file));
        let saved_peeked = std::mem::take(&mut self.peeked);
        let saved_end = self.prev_end;
        self.body(body, None);
        let mut lexer = std::mem::replace(&mut self.lexer, saved_lexer);
        self.errors.append(&mut lexer.errors);
        self.text = saved_text;
        self.peeked = saved_peeked;
        self.prev_end = saved_end;
    }

    /// `connectiontunnel a -> b, c -> d`, as older Clicks read it: what
    /// is connected to `a` port N is connected to what `b` port N is
    /// connected to.
    fn connection_tunnel(&mut self, body: &mut Body) {
        self.bump();
        loop {
            let from = self.peek();
            if from.kind != Tok::Word || self.is_keyword(from) {
                self.unexpected(from, "a tunnel name after `connectiontunnel`");
                self.recover();
                return;
            }
            self.bump();
            let arrow = self.peek();
            if arrow.kind != Tok::Arrow {
                self.unexpected(arrow, "`->` in `connectiontunnel`");
                self.recover();
                return;
            }
            self.bump();
            let to = self.peek();
            if to.kind != Tok::Word || self.is_keyword(to) {
                self.unexpected(to, "a tunnel name after `->`");
                self.recover();
                return;
            }
            self.bump();
            let span = self.span(from.start, to.end);
            let mut ok = true;
            for t in [from, to] {
                let word = self.text_of(t);
                if let Some(&prev) = body.names.get(word) {
                    let d = Diagnostic::error(
                        self.tspan(t),
                        format!("redeclaration of element `{word}`"),
                    )
                    .with_note(
                        body.elems[prev].name_span,
                        format!("element `{word}` {PREVIOUSLY_DECLARED}"),
                    );
                    self.error(d);
                    ok = false;
                }
            }
            if ok {
                body.elems.push(LocalElem {
                    declared: None,
                    name: format!("<tunnel {}>", self.text_of(from)),
                    class: ClassRef::Tunnel(2),
                    class_written: String::new(),
                    class_span: span,
                    name_span: span,
                    config: None,
                    config_span: span,
                    tentative: None,
                    alias_of: None,
                });
                let id = body.elems.len() - 1;
                body.names.insert(self.text_of(from).to_string(), id);
                body.names.insert(self.text_of(to).to_string(), id);
            }
            if self.peek().kind == Tok::Comma {
                self.bump();
                continue;
            }
            if self.peek().kind == Tok::Semi {
                self.bump();
            }
            return;
        }
    }

    /// `provide(NAME, ...)`: recorded.
    fn provide(&mut self) {
        self.bump();
        if self.peek().kind != Tok::LParen {
            let t = self.peek();
            self.unexpected(t, "`(` after `provide`");
            self.recover();
            return;
        }
        let Ok((s, e)) = self.config() else {
            return;
        };
        let raw = &self.text[s..e];
        for (a, b) in args::split_top(raw) {
            let text = args::process(&raw[a..b], None).text;
            if !text.is_empty() {
                self.provisions.push(text);
            }
        }
    }

    /// `define($NAME value, ...)`.
    fn define(&mut self, body: &mut Body) {
        self.bump();
        if self.peek().kind != Tok::LParen {
            let t = self.peek();
            self.unexpected(t, "`(` after `define`");
            self.recover();
            return;
        }
        let Ok((s, e)) = self.config() else {
            return;
        };
        let raw = &self.text[s..e];
        let b = raw.as_bytes();
        for (a, z) in args::split_top(raw) {
            let p = args::process(&raw[a..z], None);
            let Some((cs, ce)) = p.content else {
                continue;
            };
            let (cs, ce) = (a + cs, a + ce);
            let mut i = cs;
            let ok = b[i] == b'$' && i + 1 < ce && crate::scan::is_var(b[i + 1]);
            if !ok {
                let d = Diagnostic::error(
                    self.span(s + cs, s + ce),
                    "expected `$NAME value` in `define`",
                )
                .with_help("write `define($NAME value, $OTHER value)`");
                self.error(d);
                continue;
            }
            i += 1;
            while i < ce && crate::scan::is_var(b[i]) {
                i += 1;
            }
            if i < ce && !crate::scan::is_space(b[i]) && !crate::scan::comment_at(b, i) {
                let d = Diagnostic::error(
                    self.span(s + cs, s + ce),
                    "expected `$NAME value` in `define`",
                )
                .with_help("put a space between the variable and its value");
                self.error(d);
                continue;
            }
            body.defines.push(Define {
                name: raw[cs + 1..i].to_string(),
                value: (s + i, s + z),
                span: self.span(s + cs, s + i),
            });
        }
    }

    /// Resolves forward references, and names anonymous elements
    /// `Class@N`, N being the element's 1-based position in its scope, as
    /// Click numbers them; a clash with a declared name moves N up.
    fn finish_body(&mut self, body: &mut Body) {
        for i in 0..body.elems.len() {
            let Some(word) = body.elems[i].tentative.clone() else {
                continue;
            };
            if let Some(&target) = body.names.get(&word) {
                body.elems[i].alias_of = Some(target);
                continue;
            }
            self.used_classes.insert(word.clone());
            if !body.is_compound && (word == "input" || word == "output") {
                let d = Diagnostic::error(body.elems[i].name_span, format!("`{word}` is only defined inside an element class body"))
                    .with_help(format!("`{word}` stands for the ports of a compound element: `elementclass Name {{ input -> ... -> output }}`"));
                self.error(d);
            }
        }
        for c in &mut body.conns {
            if let Some(t) = body.elems[c.from].alias_of {
                c.from = t;
            }
            if let Some(t) = body.elems[c.to].alias_of {
                c.to = t;
            }
        }
        let mut taken: std::collections::HashSet<String> = body.names.keys().cloned().collect();
        // The last N given to each class: every N from an element's
        // position up to it is taken already (positions only grow), so
        // the search starts after it and each name is tried once per
        // class, not once per element.
        let mut last: HashMap<String, usize> = HashMap::new();
        let mut position = 0usize;
        for e in &mut body.elems {
            if e.alias_of.is_some() || matches!(e.class, ClassRef::Input | ClassRef::Output) {
                continue;
            }
            if let ClassRef::Tunnel(places) = e.class {
                // Click counts a group as three elements (the group and
                // its input and output), a connection tunnel as two.
                position += places;
                continue;
            }
            position += 1;
            if e.declared.is_some() {
                continue;
            }
            let mut n = match last.get(e.class_written.as_str()) {
                Some(&l) => position.max(l + 1),
                None => position,
            };
            loop {
                let candidate = format!("{}@{n}", e.class_written);
                if taken.insert(candidate.clone()) {
                    e.name = candidate;
                    break;
                }
                n += 1;
            }
            match last.get_mut(e.class_written.as_str()) {
                Some(l) => *l = n,
                None => {
                    last.insert(e.class_written.clone(), n);
                }
            }
        }
    }
}
