//! `click-xform`, Click's pattern optimizer (`tools/click-xform/`).
//!
//! A pattern file declares pairs of element classes, `NAME` and
//! `NAME_Replacement`. Wherever the elements of `NAME` occur in a
//! configuration, connected as in `NAME`, with nothing else connected to
//! the pattern's inner ports, they are replaced by the elements of
//! `NAME_Replacement`. A pattern argument written `$var` matches any
//! argument, the same one wherever `$var` is used, and the replacement's
//! arguments `$var` take the matched text. Patterns are tried in the order
//! of their replacements in the files, one replacement at a time, until no
//! pattern matches; a match made only of elements that the same pattern's
//! replacement produced is refused, so a pattern that reproduces itself
//! cannot loop. Elements are matched in the order Click's adjacency-matrix
//! search finds them (pattern elements in order, configuration elements by
//! slot), so the result, element names and order included, is Click's.

use super::graph::{Elem, Graph, Port};
use crate::args::{process, split_args};
use crate::parser::{self, ClassRef};
use crate::{library, Diagnostic, Router, Source, SourceMap};
use std::collections::{HashMap, HashSet};

/// A pattern and its replacement, both with the compound's `input`
/// (slot 0) and `output` (slot 1) as tunnels.
#[derive(Clone, Debug)]
pub struct Pattern {
    name: String,
    pattern: Graph,
    replacement: Graph,
}

impl Pattern {
    /// The pattern's class name (`NAME` of `NAME_Replacement`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The same pattern used the other way: the replacement is looked for
    /// and the pattern put in its place (`click-xform --reverse`).
    pub fn reversed(&self) -> Pattern {
        Pattern {
            name: self.name.clone(),
            pattern: self.replacement.clone(),
            replacement: self.pattern.clone(),
        }
    }
}

/// Reads the patterns of a pattern file: each element class `NAME` of the
/// file for which `NAME_Replacement` is declared too, in the order of the
/// replacements.
pub fn read_patterns(map: &mut SourceMap, source: Source) -> Result<Vec<Pattern>, Vec<Diagnostic>> {
    let file = map.add(source);
    let mut errors = Vec::new();
    let libs = library::load(map, file, &mut errors);
    let parsed = parser::parse(map, file, &libs)?;
    if !errors.is_empty() {
        return Err(errors);
    }
    let top: Vec<usize> = (0..parsed.classes.len())
        .filter(|&k| parsed.classes[k].depth == 1 && !parsed.classes[k].name.is_empty())
        .collect();
    let mut out = Vec::new();
    for &k in &top {
        let Some(base) = parsed.classes[k].name.strip_suffix("_Replacement") else {
            continue;
        };
        if base.is_empty() {
            continue;
        }
        // The latest declaration of NAME before the replacement's.
        let Some(&p) = top.iter().rev().find(|&&j| parsed.classes[j].name == base) else {
            continue;
        };
        let pattern = compound_graph(map, &parsed, p)?;
        let replacement = compound_graph(map, &parsed, k)?;
        out.push(Pattern {
            name: base.to_string(),
            pattern,
            replacement,
        });
    }
    Ok(out)
}

/// The body of compound class `k` as a graph: `input`, `output`, then its
/// elements in order, connections as written.
fn compound_graph(
    map: &SourceMap,
    parsed: &parser::Parsed,
    k: usize,
) -> Result<Graph, Vec<Diagnostic>> {
    let class = &parsed.classes[k];
    let body = &class.body;
    let mut g = Graph::default();
    let mut slot = vec![usize::MAX; body.elems.len()];
    for (i, e) in body.elems.iter().enumerate() {
        if e.alias_of.is_some() {
            continue;
        }
        slot[i] = match &e.class {
            ClassRef::Input | ClassRef::Output => g.add_element(Elem::tunnel(&e.name)),
            ClassRef::Primitive(c) => {
                let config = match e.config {
                    Some((a, b)) => {
                        let text = map.get(e.config_span.file).map_or("", |s| s.text.as_str());
                        process(&text[a..b], None).text
                    }
                    None => String::new(),
                };
                g.add_element(Elem::new(&e.name, c, &config))
            }
            ClassRef::Compound(_) | ClassRef::Tunnel(_) => {
                return Err(vec![Diagnostic::error(
                    e.name_span,
                    format!(
                        "pattern `{}`: `{}` is a compound element or a group; click-xform patterns here hold primitive elements only",
                        class.name, e.name
                    ),
                )]);
            }
        };
    }
    for c in &body.conns {
        let (f, t) = (slot[c.from], slot[c.to]);
        if f != usize::MAX && t != usize::MAX {
            g.add_connection(Port::new(f, c.from_port), Port::new(t, c.to_port));
        }
    }
    Ok(g)
}

/// Whether a pattern's configuration matches an element's, binding the
/// pattern's `$variables` in `defs` (Click's `match_config`).
fn match_config(pat: &str, conf: &str, defs: &mut HashMap<String, String>) -> bool {
    let clean = |s: &str| -> Vec<String> {
        split_args(s)
            .iter()
            .map(|a| process(a, None).text)
            .collect()
    };
    let (p, c) = (clean(pat), clean(conf));
    if p.len() != c.len() {
        return false;
    }
    let mut mine: Vec<(String, String)> = Vec::new();
    for (p, c) in p.iter().zip(&c) {
        if p == c {
            continue;
        }
        if !is_variable(p) {
            return false;
        }
        let bound = defs
            .get(p)
            .or_else(|| mine.iter().find(|(k, _)| k == p).map(|(_, v)| v));
        match bound {
            Some(v) if v != c => return false,
            Some(_) => {}
            None => mine.push((p.clone(), c.clone())),
        }
    }
    defs.extend(mine);
    true
}

fn is_variable(a: &str) -> bool {
    a.len() > 1
        && a.starts_with('$')
        && a[1..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Replaces the arguments of `config` that are exactly a bound
/// `$variable` (Click's `Matcher::replace_config`).
fn replace_config(config: &str, defs: &HashMap<String, String>) -> Option<String> {
    let mut args = split_args(config);
    let mut changed = false;
    for a in &mut args {
        if a.len() > 1 && a.starts_with('$') {
            if let Some(v) = defs.get(a.as_str()) {
                *a = v.clone();
                changed = true;
            }
        }
    }
    changed.then(|| args.join(", "))
}

/// A match found, with what `replace` needs.
struct Match {
    /// Configuration slot of each pattern slot (`None` for the tunnels).
    m: Vec<Option<usize>>,
    defs: HashMap<String, String>,
    /// Outside output -> pattern input port.
    into: Vec<(Port, usize)>,
    /// Pattern output port -> outside input.
    out_of: Vec<(usize, Port)>,
}

struct Matcher<'a> {
    pat: &'a Graph,
    body: &'a Graph,
    patid: usize,
    input: usize,
    output: usize,
    /// The configuration's connections, to look them up at once.
    conns: HashSet<(Port, Port)>,
    /// Where each output goes, what reaches each input.
    targets: HashMap<Port, Vec<Port>>,
    sources: HashMap<Port, Vec<Port>>,
    /// Live slots of each class, in slot order.
    by_class: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Matcher<'a> {
    fn new(pat: &'a Graph, body: &'a Graph, patid: usize) -> Matcher<'a> {
        let mut targets: HashMap<Port, Vec<Port>> = HashMap::new();
        let mut sources: HashMap<Port, Vec<Port>> = HashMap::new();
        for c in &body.conns {
            targets.entry(c.from).or_default().push(c.to);
            sources.entry(c.to).or_default().push(c.from);
        }
        let mut by_class: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, e) in body.elems.iter().enumerate() {
            if e.live && !e.is_tunnel() {
                by_class.entry(e.class.as_str()).or_default().push(i);
            }
        }
        Matcher {
            pat,
            body,
            patid,
            input: 0,
            output: 1,
            conns: body.conns.iter().map(|c| (c.from, c.to)).collect(),
            targets,
            sources,
            by_class,
        }
    }

    /// Slots that pattern slot `k` may match, in slot order: the
    /// neighbours of an element matched already where the pattern
    /// connects `k` to one, else every element of the class. (Slot order
    /// is Click's search order; the neighbours are the only slots that
    /// can fit.)
    fn candidates(&self, k: usize, m: &[Option<usize>]) -> Vec<usize> {
        for c in &self.pat.conns {
            if c.from.e == k && c.to.e < k {
                if let Some(t) = m[c.to.e] {
                    let mut v: Vec<usize> = self
                        .sources
                        .get(&Port::new(t, c.to.port))
                        .into_iter()
                        .flatten()
                        .filter(|p| p.port == c.from.port)
                        .map(|p| p.e)
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    return v;
                }
            }
            if c.to.e == k && c.from.e < k {
                if let Some(f) = m[c.from.e] {
                    let mut v: Vec<usize> = self
                        .targets
                        .get(&Port::new(f, c.from.port))
                        .into_iter()
                        .flatten()
                        .filter(|p| p.port == c.to.port)
                        .map(|p| p.e)
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    return v;
                }
            }
        }
        self.by_class
            .get(self.pat.elems[k].class.as_str())
            .cloned()
            .unwrap_or_default()
    }

    /// The first match in Click's search order.
    fn find(&self) -> Option<Match> {
        let n = self.pat.elems.len();
        let mut m: Vec<Option<usize>> = vec![None; n];
        let mut used = vec![false; self.body.elems.len()];
        self.search(0, &mut m, &mut used)
    }

    fn search(&self, k: usize, m: &mut Vec<Option<usize>>, used: &mut Vec<bool>) -> Option<Match> {
        if k == self.pat.elems.len() {
            return self.check(m);
        }
        if self.pat.elems[k].is_tunnel() {
            return self.search(k + 1, m, used);
        }
        for r in self.candidates(k, m) {
            if used[r] || !self.fits(k, r, m) {
                continue;
            }
            m[k] = Some(r);
            used[r] = true;
            if let Some(found) = self.search(k + 1, m, used) {
                return Some(found);
            }
            used[r] = false;
            m[k] = None;
        }
        None
    }

    /// Whether pattern slot `k` may be configuration slot `r`, given the
    /// slots matched before it: same class, and every pattern connection
    /// between them present.
    fn fits(&self, k: usize, r: usize, m: &[Option<usize>]) -> bool {
        let (pe, be) = (&self.pat.elems[k], &self.body.elems[r]);
        if !be.live || be.is_tunnel() || pe.class != be.class {
            return false;
        }
        let at = |i: usize| if i == k { Some(r) } else { m[i] };
        self.pat.conns.iter().all(|c| {
            if c.from.e != k && c.to.e != k {
                return true;
            }
            match (at(c.from.e), at(c.to.e)) {
                (Some(f), Some(t))
                    if !self.pat.elems[c.from.e].is_tunnel()
                        && !self.pat.elems[c.to.e].is_tunnel() =>
                {
                    self.conns
                        .contains(&(Port::new(f, c.from.port), Port::new(t, c.to.port)))
                }
                _ => true,
            }
        })
    }

    /// Click's `Matcher::check_match`: configurations, and the ports
    /// where the match meets the rest of the configuration.
    fn check(&self, m: &[Option<usize>]) -> Option<Match> {
        let mut defs = HashMap::new();
        for (i, b) in m.iter().enumerate() {
            if let Some(b) = b {
                if !match_config(
                    &self.pat.elems[i].config,
                    &self.body.elems[*b].config,
                    &mut defs,
                ) {
                    return None;
                }
            }
        }
        let mut back: Vec<Option<usize>> = vec![None; self.body.elems.len()];
        let mut all_previous = true;
        for (i, b) in m.iter().enumerate() {
            if let Some(b) = *b {
                back[b] = Some(i);
                if self.body.elems[b].flags != self.patid {
                    all_previous = false;
                }
            }
        }
        if all_previous {
            return None;
        }
        let mut into = Vec::new();
        let mut out_of = Vec::new();
        for c in &self.body.conns {
            match (back[c.from.e], back[c.to.e]) {
                (Some(pf), Some(pt)) => {
                    if !self
                        .pat
                        .has_connection(Port::new(pf, c.from.port), Port::new(pt, c.to.port))
                    {
                        return None;
                    }
                }
                (None, Some(pt)) => into.push((
                    c.from,
                    self.check_into(c.from, Port::new(pt, c.to.port), m)?,
                )),
                (Some(pf), None) => out_of.push((
                    self.check_out_of(Port::new(pf, c.from.port), c.to, m)?,
                    c.to,
                )),
                (None, None) => {}
            }
        }
        // Every pattern port must be used.
        for c in &self.pat.conns {
            if c.from.e == self.input && !into.iter().any(|&(_, p)| p == c.from.port) {
                return None;
            }
            if c.to.e == self.output && !out_of.iter().any(|&(p, _)| p == c.to.port) {
                return None;
            }
        }
        Some(Match {
            m: m.to_vec(),
            defs,
            into,
            out_of,
        })
    }

    /// The pattern input port that outside output `outside`, connected
    /// to pattern port `inside`, stands for: the lowest one all of whose
    /// pattern connections `outside` has.
    fn check_into(&self, outside: Port, inside: Port, m: &[Option<usize>]) -> Option<usize> {
        let mut ports: Vec<usize> = self
            .pat
            .sources(inside)
            .into_iter()
            .filter(|p| p.e == self.input)
            .map(|p| p.port)
            .collect();
        ports.sort_unstable();
        let have = self.targets.get(&outside).cloned().unwrap_or_default();
        ports.into_iter().find(|&q| {
            self.pat
                .targets(Port::new(self.input, q))
                .iter()
                .all(|t| m[t.e].is_some_and(|b| have.contains(&Port::new(b, t.port))))
        })
    }

    /// The pattern output port that pattern port `inside`, connected to
    /// outside input `outside`, stands for.
    fn check_out_of(&self, inside: Port, outside: Port, m: &[Option<usize>]) -> Option<usize> {
        let mut ports: Vec<usize> = self
            .pat
            .targets(inside)
            .into_iter()
            .filter(|p| p.e == self.output)
            .map(|p| p.port)
            .collect();
        ports.sort_unstable();
        let have = self.sources.get(&outside).cloned().unwrap_or_default();
        ports.into_iter().find(|&q| {
            self.pat
                .sources(Port::new(self.output, q))
                .iter()
                .all(|s| m[s.e].is_some_and(|b| have.contains(&Port::new(b, s.port))))
        })
    }
}

/// Click's `uniqueify_prefix`: `NAME@N`, N counting up from where the
/// last search for NAME stopped, such that no element is named
/// `NAME@N/...`.
fn unique_prefix(base: &str, body: &Graph, counters: &mut HashMap<String, usize>) -> String {
    let count = counters.entry(base.to_string()).or_insert(1);
    loop {
        let prefix = format!("{base}@{count}");
        *count += 1;
        let slash = format!("{prefix}/");
        if !body
            .elems
            .iter()
            .any(|e| e.live && e.name.len() > slash.len() && e.name.starts_with(&slash))
        {
            return prefix;
        }
    }
}

/// Puts `rep` in place of match `mt` (Click's `Matcher::replace`).
fn replace(
    body: &mut Graph,
    pat: &Graph,
    rep: &Graph,
    mt: &Match,
    base: &str,
    patid: usize,
    counters: &mut HashMap<String, usize>,
) {
    let prefix = unique_prefix(base, body, counters);
    let mut old_names = Vec::new();
    let mut changed = Vec::new();
    for (i, b) in mt.m.iter().enumerate() {
        if let Some(b) = *b {
            changed.push(b);
            old_names.push((i, body.elems[b].name.clone()));
            body.free_element(b);
        }
    }
    body.collector = Some(changed);
    let new_pp = body.add_element(Elem::tunnel(&prefix));
    body.add_tunnel(&prefix, &format!("{prefix}/input"));
    body.add_tunnel(&format!("{prefix}/output"), &prefix);
    let mut slot = Vec::with_capacity(rep.elems.len());
    for e in &rep.elems {
        let name = format!("{prefix}/{}", e.name);
        slot.push(body.get_element(&name, || {
            let mut n = e.clone();
            n.name = name.clone();
            n.tunnel_in = None;
            n.tunnel_out = None;
            n.flags = 0;
            n
        }));
    }
    for c in &rep.conns {
        body.add_connection(
            Port::new(slot[c.from.e], c.from.port),
            Port::new(slot[c.to.e], c.to.port),
        );
    }
    for &i in body.collector.clone().unwrap_or_default().iter() {
        if !body.elems[i].live {
            continue;
        }
        body.elems[i].flags = patid;
        if let Some(c) = replace_config(&body.elems[i].config, &mt.defs) {
            body.elems[i].config = c;
        }
    }
    // A replacement element named as the pattern element it stands for
    // keeps the matched element's name.
    for (i, old) in &old_names {
        if let Some(j) = body.eindex(&format!("{prefix}/{}", pat.elems[*i].name)) {
            body.change_ename(j, old);
        }
    }
    for &(from, q) in &mt.into {
        body.add_connection(from, Port::new(new_pp, q));
    }
    for &(q, to) in &mt.out_of {
        body.add_connection(Port::new(new_pp, q), to);
    }
    body.remove_tunnels();
    body.collector = None;
}

/// What [`xform`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xformed {
    /// The transformed configuration, as Click's tools print it.
    pub config: String,
    /// How many replacements were made.
    pub replacements: usize,
}

/// Applies `patterns` to `router` (read into `map`) until none matches.
///
/// Gives up, with an error naming the pattern, after `max_replacements`
/// replacements: patterns that undo each other would run forever.
pub fn xform(
    router: &Router,
    map: &SourceMap,
    patterns: &[Pattern],
    max_replacements: usize,
) -> Result<Xformed, String> {
    let mut body = Graph::from_router(router, map);
    let mut counters = HashMap::new();
    let mut n = 0;
    'rounds: loop {
        for (i, p) in patterns.iter().enumerate() {
            let found = Matcher::new(&p.pattern, &body, i + 1).find();
            if let Some(mt) = found {
                if n == max_replacements {
                    return Err(format!(
                        "gave up after {n} replacements (pattern '{}' still matches): do some patterns undo others?",
                        p.name
                    ));
                }
                replace(
                    &mut body,
                    &p.pattern,
                    &p.replacement,
                    &mt,
                    &p.name,
                    i + 1,
                    &mut counters,
                );
                n += 1;
                continue 'rounds;
            }
        }
        break;
    }
    if n > 0 {
        body.remove_dead_elements();
    }
    Ok(Xformed {
        config: body.unparse(),
        replacements: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(text: &str) -> Vec<Pattern> {
        let mut map = SourceMap::default();
        read_patterns(&mut map, Source::from_string(text)).expect("patterns parse")
    }

    fn run(config: &str, pats: &str) -> Xformed {
        let mut map = SourceMap::default();
        let r = crate::parse(&mut map, Source::from_string(config)).expect("config parses");
        xform(&r, &map, &patterns(pats), 1000).expect("ends")
    }

    #[test]
    fn config_variables_bind_once() {
        let mut d = HashMap::new();
        assert!(match_config("$a, 2, $a", "x y, 2, x y", &mut d));
        assert_eq!(d.get("$a").map(String::as_str), Some("x y"));
        let mut d = HashMap::new();
        assert!(!match_config("$a, $a", "1, 2", &mut d));
        assert!(d.is_empty());
        assert!(!match_config("$a", "1, 2", &mut HashMap::new()));
        assert!(!match_config("3", "4", &mut HashMap::new()));
        assert!(!match_config("$a-b", "4", &mut HashMap::new()));
        let d = HashMap::from([("$m".to_string(), "1500".to_string())]);
        assert_eq!(
            replace_config("$m, $other, x$m", &d).as_deref(),
            Some("1500, $other, x$m")
        );
        assert_eq!(replace_config("1, 2", &d), None);
    }

    const PAIR: &str = "elementclass P { input -> a :: A($x) -> B -> output }
                        elementclass P_Replacement { input -> a :: AB($x) -> output }";

    #[test]
    fn a_chain_is_replaced_and_keeps_the_matched_name() {
        let x = run("s :: S; s -> p :: A(7) -> B -> d :: D;", PAIR);
        assert_eq!(x.replacements, 1);
        // The replacement takes a new slot, after `d`, as in Click.
        assert_eq!(
            x.config,
            "s :: S;\nd :: D;\np :: AB(7);\ns -> p\n    -> d;\n"
        );
    }

    #[test]
    fn inner_ports_used_from_outside_refuse_the_match() {
        // Something else feeds B: the pattern does not cover it.
        let x = run(
            "s :: S; t :: T; s -> A(7) -> b :: B -> d :: D; t -> b;",
            PAIR,
        );
        assert_eq!(x.replacements, 0);
        // A's other output is used outside.
        let x = run("s :: S; s -> a :: A(7) -> B -> d :: D; a[1] -> d;", PAIR);
        assert_eq!(x.replacements, 0);
    }

    #[test]
    fn a_refused_match_lets_the_search_go_on_to_the_next() {
        // The first A -> B pair is refused (its B is fed from elsewhere);
        // the search backtracks and takes the second.
        let x = run(
            "s :: S; t :: T; u :: U; s -> A(7) -> b :: B -> d :: D; t -> b; u -> A(8) -> B -> e :: E;",
            PAIR,
        );
        assert_eq!(x.replacements, 1);
        assert!(x.config.contains("A@4 :: A(7);\nb :: B;\n"), "{}", x.config);
        assert!(x.config.contains("A@7 :: AB(8);\n"), "{}", x.config);
        assert!(x.config.contains("u -> A@7\n    -> e;\n"), "{}", x.config);
    }

    #[test]
    fn every_occurrence_is_replaced_and_named_apart() {
        let pats = "elementclass P { input -> A -> B -> output }
                    elementclass P_Replacement { input -> AB -> output }";
        let x = run("S -> A -> B -> D; T -> A -> B -> E;", pats);
        assert_eq!(x.replacements, 2);
        assert_eq!(
            x.config,
            // The second replacement reuses the slots the first freed.
            "S@1 :: S;\nP@2/AB@1 :: AB;\nD@4 :: D;\nT@5 :: T;\nE@8 :: E;\nP@1/AB@1 :: AB;\n\
             S@1 -> P@1/AB@1\n    -> D@4;\nT@5 -> P@2/AB@1\n    -> E@8;\n"
        );
    }

    #[test]
    fn a_pattern_that_reproduces_itself_stops() {
        let pats = "elementclass P { input -> A -> output }
                    elementclass P_Replacement { input -> A -> output }";
        let x = run("S -> A -> D;", pats);
        assert_eq!(x.replacements, 1);
    }

    #[test]
    fn patterns_that_undo_each_other_are_stopped() {
        let pats = "elementclass P { input -> A -> output }
                    elementclass P_Replacement { input -> B -> output }
                    elementclass Q { input -> B -> output }
                    elementclass Q_Replacement { input -> A -> output }";
        let mut map = SourceMap::default();
        let r = crate::parse(&mut map, Source::from_string("S -> A -> D;")).expect("parses");
        let e = xform(&r, &map, &patterns(pats), 50).expect_err("loops");
        assert!(e.contains("gave up after 50 replacements"), "{e}");
    }

    #[test]
    fn reversed_patterns_swap_the_two_sides() {
        let p = patterns(PAIR);
        let back: Vec<Pattern> = p.iter().map(Pattern::reversed).collect();
        let mut map = SourceMap::default();
        let r = crate::parse(
            &mut map,
            Source::from_string("s :: S; s -> a :: AB(3) -> d :: D;"),
        )
        .expect("parses");
        let x = xform(&r, &map, &back, 10).expect("ends");
        assert_eq!(
            x.config,
            "s :: S;\nd :: D;\na :: A(3);\nP@1/B@2 :: B;\ns -> a\n    -> P@1/B@2\n    -> d;\n"
        );
    }

    #[test]
    fn classes_without_replacements_are_not_patterns() {
        assert!(patterns("elementclass P { input -> A -> output }").is_empty());
        assert_eq!(patterns(PAIR)[0].name(), "P");
    }
}
