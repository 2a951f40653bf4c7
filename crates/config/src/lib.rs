//! The Click configuration language, read into a flat, located graph
//! description.
//!
//! bricks is programmed in the language of the Click modular router
//! (Kohler et al., "The Click modular router", ACM TOCS 18(3), 2000, §2 and
//! §4), and Click's own configurations, such as the two-interface IP router
//! of the paper, parse unmodified. This crate knows nothing about element
//! classes: it returns every element with its class name and argument
//! texts, and every connection with its ports, each with the [`Span`] it
//! came from, so that the checker (which knows the classes) can point at
//! the offending text. Errors come back as [`Diagnostic`]s that
//! [`SourceMap::render`] shows the way rustc does. The one exception is
//! [`tools`], Click's configuration tools (`click-xform`, `click-align`),
//! whose alignment analysis carries Click's tool's own table of classes.
//!
//! # Grammar
//!
//! ```text
//! config      ::= stmt*
//! stmt        ::= connection | elementclass | define | require | provide | tunnel | ";"
//! connection  ::= elements ( ( "->" | "=>" ) elements )* [";"]
//! elements    ::= item ( "," item )*                          element list
//! item        ::= [ports] element [ports]
//!               | [ports] "(" stmt* ")" [ports]              element group
//! element     ::= WORD "(" ARGS ")"              anonymous element of class WORD
//!               | WORD "::" class [ "(" ARGS ")" ] declaration
//!               | WORD                           a declared name, else an anonymous element of class WORD
//!               | body [ "(" ARGS ")" ]          anonymous compound, named `@N`
//! class       ::= WORD | body
//! ports       ::= "[" "]" | "[" NUMBER ( "," NUMBER )* [","] "]"
//! elementclass::= "elementclass" WORD body
//!               | "elementclass" WORD WORD                    synonym
//! body        ::= "{" variant ( "||" variant )* [ "||" "..." ] "}"
//! variant     ::= [ formals "|" ] stmt*
//! formals     ::= formal ( "," formal )*       formal ::= [KEYWORD] "$"VAR
//! define      ::= "define" "(" "$"VAR value ( "," "$"VAR value )* ")"
//! require     ::= "require" "(" ARGS ")"       provide ::= "provide" "(" ARGS ")"
//! tunnel      ::= "connectiontunnel" WORD "->" WORD ( "," WORD "->" WORD )*
//! WORD        ::= [A-Za-z0-9_@]+ ( "/" [A-Za-z0-9_@]+ )*
//! ```
//!
//! Whitespace and newlines separate tokens only; `;` is optional between
//! statements, as in Click. Comments are `// ...` and `/* ... */`; a line
//! whose first character is `#` is a preprocessor line and is ignored.
//! `ARGS` is raw text up to the matching `)`, in which parentheses nest and
//! comments, `"..."` and `'...'` strings and `\<hex>` data literals are
//! skipped whole; it is split into arguments at commas outside all of
//! these and outside `[]` and `{}`.
//!
//! Connections follow Click's `lib/lexer.cc`. Both sides of a connector
//! are lists of elements, each with a port list; ports pair up in order
//! (`a [0, 1] => [1, 0] b`), a side with a single port meets every port of
//! the other (`a -> b, c`, `a, b -> c`), and a list ending in `,]` (or
//! `[]`, from 0) grows to match the other side. Many-to-many connections
//! need `=>`, which also reads a side without ports as expandable; port
//! counts that cannot match are errors in Click's words (`connection
//! mismatch: 3 outputs connected to 2 inputs`). `a, b :: C(args)` alone in a
//! statement declares both names. Inside an element class or a group, a
//! chain may start with `->` (from `input`) and end with `->` (to
//! `output`).
//!
//! Anonymous elements are named `Class@N`, N being the element's 1-based
//! position in its scope, as Click names them; a clash with a declared name
//! moves N up. An anonymous compound `{ ... }` is named `@N`, and a group
//! `( ... )` takes three places (it, its input and its output), as in
//! Click. Inside `elementclass` bodies, `input` and `output` are the
//! compound's ports; expansion names inner elements `outer/inner` and
//! splices the ports out (see [`parse`]). A group's statements belong to
//! the enclosing scope; its `input` and `output` pass connections through.
//!
//! An element class may have several bodies separated by `||`; each
//! element uses the first whose number of positional parameters and of
//! input and output ports fit it, as Click's `Compound::resolve` chooses,
//! and a last alternative `...` stands for what the class name meant
//! before (a compound or a primitive class).
//!
//! `$VAR` and `${VAR}` in argument text are replaced by a compound
//! parameter or a `define`d value; `${VAR-default}` gives a default and
//! `${VAR[N]}` the Nth space-separated word (from 0). As in Click, an
//! undefined variable is left as written (elements such as `Script`
//! expand variables of their own).
//!
//! `require(library FILE)` reads FILE, relative to the requiring file, at
//! file scope and once per configuration; its classes are visible after the
//! `require`. `require(package NAME)` (or a single word) is recorded with a
//! warning in [`Router::warnings`]; other requirements, and `provide(...)`,
//! are recorded.
//!
//! `connectiontunnel in -> out` (from older Clicks) connects what goes
//! into `in` port N to what leaves `out` port N.
//!
//! Not supported: `require(library ...)` searching `CLICKPATH` (only the
//! requiring file's directory is searched), and `require(compact_config)`
//! (recorded, no effect).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod archive;
mod args;
mod argtext;
mod expand;
mod flatten;
mod lexer;
mod library;
mod parser;
mod scan;
mod source;
mod suggest;
pub mod tools;

pub use args::{parse_data, split_args, split_keyword, unquote, unquote_bytes};
pub use argtext::ArgText;
pub use flatten::{click_order, flatten};
pub use source::{Diagnostic, Source, SourceMap, Span};
pub use suggest::suggest;

/// A configuration after compound expansion: elements and the
/// connections between them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Router {
    /// Every element, compound elements replaced by their contents.
    pub elements: Vec<ElementDecl>,
    /// Every connection, between indices into `elements`.
    pub connections: Vec<Connection>,
    /// The arguments of `require(...)` statements, in order, except
    /// `library FILE` (whose file is read). They are recorded and not
    /// acted on.
    pub requirements: Vec<String>,
    /// The arguments of `provide(...)` statements, in order.
    pub provisions: Vec<String>,
    /// What deserves a word but does not stop the configuration, such as
    /// `require(package ...)`; render them with
    /// [`SourceMap::render_warning`].
    pub warnings: Vec<Diagnostic>,
    /// The configuration's text as given (Click's `config` handler),
    /// shared: a router is cloned where its text is not needed again.
    pub text: std::sync::Arc<str>,
}

impl Router {
    /// Index of the element named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.elements.iter().position(|e| e.name == name)
    }

    /// The element named `name`.
    pub fn element(&self, name: &str) -> Option<&ElementDecl> {
        self.elements.iter().find(|e| e.name == name)
    }
}

/// One element of the flat configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementDecl {
    /// Unique name: as declared, `Class@N` for an anonymous element, with
    /// `compound/` prefixes for elements that came from compound elements.
    pub name: String,
    /// The primitive class (synonyms from `elementclass A B` resolved).
    pub class: String,
    /// Where the class name was written.
    pub class_span: Span,
    /// Where the name was declared; the class name for anonymous elements.
    pub name_span: Span,
    /// The arguments, split at top-level commas.
    pub args: std::sync::Arc<[Arg]>,
    /// The whole argument text, variables substituted and comments
    /// removed (shared: a route table given inline makes it megabytes).
    pub config: std::sync::Arc<str>,
    /// The text between the parentheses (an empty span after the class name
    /// when there are none).
    pub config_span: Span,
    /// Whether the element was written without a name.
    pub anonymous: bool,
    /// For an element that came from a compound element: the places of the
    /// compound elements it was expanded from, innermost first, with a
    /// message fit for [`Diagnostic::notes`]. Empty at top level.
    pub expansion: Vec<(Span, String)>,
}

impl ElementDecl {
    /// Argument texts, for callers that need no spans.
    pub fn arg_texts(&self) -> Vec<&str> {
        self.args.iter().map(|a| a.text.as_str()).collect()
    }
}

/// One argument of an element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg {
    /// Trimmed, comments removed, variables substituted.
    pub text: ArgText,
    /// The argument's text in the source, without surrounding space and
    /// comments (inside the compound body for expanded elements).
    pub span: Span,
}

/// `elements[from][from_port] -> [to_port]elements[to]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// Index of the source element in [`Router::elements`].
    pub from: usize,
    /// Output port of the source.
    pub from_port: usize,
    /// Index of the destination element.
    pub to: usize,
    /// Input port of the destination.
    pub to_port: usize,
    /// The connection as written (for connections through compound
    /// elements, the one leaving the source element).
    pub span: Span,
}

/// Bounds on what expansion may produce, so that a small text cannot
/// make the parser run out of time or memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Elements after expansion.
    pub max_elements: usize,
    /// Compound elements inside compound elements.
    pub max_depth: usize,
    /// Connections after expansion.
    pub max_connections: usize,
    /// Argument text produced by expansion, in bytes.
    pub max_config_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_elements: 1_000_000,
            max_depth: 64,
            max_connections: 4_000_000,
            max_config_bytes: 1 << 30,
        }
    }
}

/// Settings for [`parse_with`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Variables set from outside, like `click router.click DEV=eth1`:
    /// they override the file's `define`s. Names may omit the `$`.
    pub defines: Vec<(String, String)>,
    /// Expansion bounds.
    pub limits: Limits,
}

/// Parses a configuration and expands its compound elements.
///
/// The source is added to `map` so that the spans of the result, and of
/// the diagnostics, can be rendered. All errors found are returned, sorted
/// by position; expansion errors (undefined variables, missing compound
/// ports, limits) are only looked for once the text parses.
///
/// ```
/// use bricks_config::{parse, Source, SourceMap};
/// let mut map = SourceMap::new();
/// let router = parse(&mut map, Source::from_string(
///     "FromDevice(eth0) -> q :: Queue(200) -> ToDevice(eth0);",
/// )).unwrap();
/// let names: Vec<_> = router.elements.iter().map(|e| e.name.as_str()).collect();
/// assert_eq!(names, ["FromDevice@1", "q", "ToDevice@3"]);
/// assert_eq!(router.connections.len(), 2);
/// ```
pub fn parse(map: &mut SourceMap, source: Source) -> Result<Router, Vec<Diagnostic>> {
    parse_with(map, source, &Options::default())
}

/// [`parse`] with outside variables and expansion limits.
pub fn parse_with(
    map: &mut SourceMap,
    source: Source,
    options: &Options,
) -> Result<Router, Vec<Diagnostic>> {
    let file = map.add(source);
    let mut library_errors = Vec::new();
    let libs = library::load(map, file, &mut library_errors);
    let map = &*map;
    let parsed = match parser::parse(map, file, &libs) {
        Ok(parsed) if library_errors.is_empty() => parsed,
        Ok(_) => return Err(sorted(library_errors)),
        Err(mut errors) => {
            errors.append(&mut library_errors);
            return Err(sorted(errors));
        }
    };
    let (elements, connections) = expand::expand(&parsed, map, options).map_err(sorted)?;
    Ok(Router {
        elements,
        connections,
        requirements: parsed.requirements,
        provisions: parsed.provisions,
        warnings: parsed.warnings,
        text: map
            .get(file)
            .map_or_else(|| "".into(), |s| s.text.as_str().into()),
    })
}

/// Orders diagnostics by file and position.
fn sorted(mut errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    errors.sort_by_key(|d| (d.span.file, d.span.start, d.span.end));
    errors.dedup();
    errors
}

#[cfg(test)]
mod tests;
