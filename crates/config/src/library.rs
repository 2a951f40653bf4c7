//! `require(library FILE)`: element-class libraries read before parsing.
//!
//! Click's `yrequire_library` reads the file named relative to the
//! directory of the file that requires it, once per configuration (a second
//! `require` of the same library does nothing), and parses it at file
//! scope, so the classes (and elements) it defines are visible after the
//! `require`. Here every library is found and added to the [`SourceMap`]
//! first, following top-level `require`s depth first; the parser then reads
//! each where it is required. A library that requires itself, directly or
//! through others, is an error, and so is nesting deeper than
//! [`MAX_LIBRARY_DEPTH`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::args;
use crate::lexer::{Lexer, Tok};
use crate::source::{Diagnostic, Source, SourceMap, Span};

/// Deepest chain of libraries requiring libraries.
pub(crate) const MAX_LIBRARY_DEPTH: usize = 16;

/// Most library files one configuration may read.
const MAX_LIBRARIES: usize = 1024;

/// The libraries of a configuration: for each `require(library ...)`
/// argument, by (file, start of the argument text), the file it loaded.
#[derive(Default)]
pub(crate) struct Libraries {
    pub loaded: HashMap<(u32, usize), u32>,
}

/// One `require` argument: `library FILE`, `package NAME`, or a single
/// word (which Click reads as a package name).
pub(crate) enum Requirement {
    Library(String),
    Package(String),
    Other,
}

/// Classifies one argument of `require(...)` as Click's `yrequire` does.
pub(crate) fn classify(arg: &str) -> Requirement {
    let words: Vec<&str> = arg.split_ascii_whitespace().collect();
    let unquoted = |w: &str| args::unquote(w).unwrap_or_else(|_| w.to_string());
    match words.as_slice() {
        ["library", file] => Requirement::Library(unquoted(file)),
        ["package", name] => Requirement::Package(unquoted(name)),
        ["compact_config"] => Requirement::Other,
        [name] => Requirement::Package(unquoted(name)),
        _ => Requirement::Other,
    }
}

/// Loads the libraries `file` requires, and theirs, into `map`.
pub(crate) fn load(map: &mut SourceMap, file: u32, errors: &mut Vec<Diagnostic>) -> Libraries {
    let mut libs = Libraries::default();
    let mut stack: Vec<(PathBuf, Span)> = Vec::new();
    let mut by_path: HashMap<PathBuf, u32> = HashMap::new();
    if let Some(src) = map.get(file) {
        if let Ok(p) = std::fs::canonicalize(&src.name) {
            by_path.insert(p.clone(), file);
            stack.push((p, Span::new(file, 0, 0)));
        }
    }
    visit(map, file, &mut stack, &mut by_path, &mut libs, errors);
    libs
}

fn visit(
    map: &mut SourceMap,
    file: u32,
    stack: &mut Vec<(PathBuf, Span)>,
    by_path: &mut HashMap<PathBuf, u32>,
    libs: &mut Libraries,
    errors: &mut Vec<Diagnostic>,
) {
    let Some(src) = map.get(file) else {
        return;
    };
    let dir = Path::new(&src.name)
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    for (start, end, name) in top_level_libraries(&src.text, file) {
        let span = Span::new(file, start, end);
        if stack.len() > MAX_LIBRARY_DEPTH {
            errors.push(
                Diagnostic::error(
                    span,
                    format!("libraries nested more than {MAX_LIBRARY_DEPTH} deep"),
                )
                .with_help("a library requires a library that requires ... too many times"),
            );
            continue;
        }
        let path = dir.join(&name);
        let Ok(canonical) = std::fs::canonicalize(&path) else {
            errors.push(
                Diagnostic::error(span, format!("library `{name}` not found")).with_help(format!(
                    "libraries are read relative to the requiring file: looked for `{}`",
                    path.display()
                )),
            );
            continue;
        };
        if let Some(pos) = stack.iter().position(|(p, _)| *p == canonical) {
            let mut d = Diagnostic::error(span, format!("library `{name}` requires itself"))
                .with_help("remove one `require(library ...)` of the cycle");
            for (_, via) in &stack[pos + 1..] {
                d = d.with_note(*via, "required here");
            }
            errors.push(d);
            continue;
        }
        if let Some(&id) = by_path.get(&canonical) {
            libs.loaded.insert((file, start), id);
            continue;
        }
        if by_path.len() >= MAX_LIBRARIES {
            errors.push(Diagnostic::error(
                span,
                format!("more than {MAX_LIBRARIES} libraries"),
            ));
            continue;
        }
        let text = match std::fs::read_to_string(&canonical) {
            Ok(t) => t,
            Err(e) => {
                errors.push(Diagnostic::error(
                    span,
                    format!("library `{name}` cannot be read: {e}"),
                ));
                continue;
            }
        };
        let id = map.add(Source::new(path.display().to_string(), text));
        by_path.insert(canonical.clone(), id);
        libs.loaded.insert((file, start), id);
        stack.push((canonical, span));
        visit(map, id, stack, by_path, libs, errors);
        stack.pop();
    }
}

/// The `library FILE` arguments of the `require`s outside braces: (start,
/// end) of the argument and the file name.
fn top_level_libraries(text: &str, file: u32) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut lexer = Lexer::new(text, file);
    let mut depth = 0usize;
    let mut after_require = false;
    loop {
        let t = lexer.next();
        match t.kind {
            Tok::Eof => break,
            Tok::LBrace => depth += 1,
            Tok::RBrace => depth = depth.saturating_sub(1),
            Tok::LParen => {
                let Ok((s, e)) = lexer.config(t.start) else {
                    break;
                };
                if after_require && depth == 0 {
                    for (a, b) in args::split_top(&text[s..e]) {
                        let arg = args::process(&text[s + a..s + b], None);
                        let Some((cs, ce)) = arg.content else {
                            continue;
                        };
                        if let Requirement::Library(name) = classify(&arg.text) {
                            out.push((s + a + cs, s + a + ce, name));
                        }
                    }
                }
            }
            _ => {}
        }
        after_require = t.kind == Tok::Word && &text[t.start..t.end] == "require";
    }
    out
}
