//! `click-combine` and `click-uncombine`, as Click's tools of those names
//! (`tools/click-combine/`): several router configurations joined at
//! their devices into one, for analysing a network as one graph, and one
//! component taken back out.
//!
//! Each component's elements are renamed `NAME/element`. A link
//! `A.eth1=B.eth0` replaces A's `ToDevice(eth1)` and B's
//! `FromDevice(eth0)` (or `PollDevice(eth0)`), or the elements so named,
//! with one `RouterLink` element whose arguments remember them: pairs of
//! `COMPONENT ELEMENT CLASS` and the element's arguments, the link's
//! inputs first. Links that share an end become one RouterLink. The
//! combined configuration travels in an archive with a `componentmap`
//! member naming the components, which `click-uncombine` reads.

use super::graph::{Elem, Graph, Port};
use crate::archive::Member;
use crate::args::{process, split_args};
use crate::{Router, SourceMap};

/// One configuration to combine.
pub struct Component<'a> {
    /// The component's name: its elements become `name/element`.
    pub name: String,
    /// Its configuration.
    pub router: &'a Router,
    /// The sources of `router`, for its arguments as written.
    pub map: &'a SourceMap,
    /// The other members of its archive, when it was combined already.
    pub members: &'a [Member],
}

/// What `click-combine` made.
#[derive(Debug, Clone)]
pub struct Combined {
    /// The combined configuration.
    pub config: String,
    /// The archive members that go with it: `componentmap`, and
    /// `elementmap.xml` describing RouterLink when there are links.
    pub members: Vec<Member>,
    /// Warnings (printed; the configuration is still written).
    pub messages: Vec<String>,
}

/// What `click-uncombine` made.
#[derive(Debug, Clone)]
pub struct Uncombined {
    /// The component's configuration.
    pub config: String,
    /// The archive members left: the component's own `componentmap` when
    /// it was itself combined, `elementmap.xml`.
    pub members: Vec<Member>,
    /// Warnings (printed; the configuration is still written).
    pub messages: Vec<String>,
}

/// Click's `cp_argvec`: arguments split at commas, comments removed.
fn argvec(config: &str) -> Vec<String> {
    split_args(config)
        .iter()
        .map(|a| process(a, None).text.to_string())
        .collect()
}

/// Whether `name` may name a component (a Click identifier, slashes
/// between parts).
fn legal_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '@'))
        && !name.contains("//")
        && !name.starts_with('/')
        && !name.ends_with('/')
}

/// The live element of `g` whose class is one of `classes` and whose
/// first argument is `dev`; an error when there are several.
fn find_device(
    g: &Graph,
    dev: &str,
    classes: &[&str],
    router: &str,
    errors: &mut Vec<String>,
) -> Option<usize> {
    let dev = argvec(dev).into_iter().next().unwrap_or_default();
    let mut found = None;
    for (i, e) in g.elems.iter().enumerate() {
        if !e.live || !classes.contains(&e.class.as_str()) {
            continue;
        }
        if argvec(&e.config).first() == Some(&dev) {
            if found.is_some() {
                let alts: Vec<String> = classes.iter().map(|c| format!("'{c}({dev})'")).collect();
                errors.push(format!(
                    "more than one {} element in router '{router}'",
                    alts.join(" or ")
                ));
                return None;
            }
            found = Some(i);
        }
    }
    found
}

/// One end of a link: component index and element slot in its graph.
type End = (usize, usize);

/// Parses `A.x=B.y` against the components.
fn parse_link(
    text: &str,
    names: &[String],
    graphs: &[Graph],
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Option<(End, End)> {
    let spaced: String = text
        .chars()
        .flat_map(|c| match c {
            '.' | '=' => vec![' ', c, ' '],
            c => vec![c],
        })
        .collect();
    let w: Vec<&str> = spaced.split_whitespace().collect();
    if w.len() != 7 || w[1] != "." || w[3] != "=" || w[5] != "." {
        errors.push(format!("bad link definition '{text}'"));
        return None;
    }
    let r1 = names.iter().position(|n| n == w[0]);
    let r2 = names.iter().position(|n| n == w[4]);
    let (Some(r1), Some(r2)) = (r1, r2) else {
        for (r, n) in [(r1, w[0]), (r2, w[4])] {
            if r.is_none() {
                errors.push(format!("no router named '{n}'"));
            }
        }
        return None;
    };
    let e1 = graphs[r1]
        .eindex(w[2])
        .or_else(|| find_device(&graphs[r1], w[2], &["ToDevice"], w[0], errors));
    let e2 = graphs[r2].eindex(w[6]).or_else(|| {
        find_device(
            &graphs[r2],
            w[6],
            &["FromDevice", "PollDevice"],
            w[4],
            errors,
        )
    });
    let (Some(e1), Some(e2)) = (e1, e2) else {
        for (e, r, n) in [(e1, w[0], w[2]), (e2, w[4], w[6])] {
            if e.is_none() {
                errors.push(format!("router '{r}' has no element or device named '{n}'"));
            }
        }
        return None;
    };
    let c1 = &graphs[r1].elems[e1].class;
    if c1 != "ToDevice" {
        warnings.push(format!(
            "router '{}' element '{}' has unexpected class\n  expected ToDevice, got {c1}",
            w[0], w[2]
        ));
    }
    let c2 = &graphs[r2].elems[e2].class;
    if c2 != "FromDevice" && c2 != "PollDevice" {
        warnings.push(format!(
            "router '{}' element '{}' has unexpected class\n  expected FromDevice or PollDevice, got {c2}",
            w[4], w[6]
        ));
    }
    Some(((r1, e1), (r2, e2)))
}

/// The `elementmap.xml` member Click writes with links: RouterLink's
/// traits.
fn routerlink_elementmap() -> Member {
    Member::new(
        "elementmap.xml",
        "<?xml version=\"1.0\" standalone=\"yes\"?>\n\
         <elementmap xmlns=\"http://www.lcdf.org/click/xml/\">\n  \
         <entry name=\"RouterLink\" processing=\"l/h\" flowcode=\"x/x\" flags=\"S3\" />\n\
         </elementmap>\n"
            .to_string(),
        0o600,
    )
}

/// `click-combine`: `components` joined by `links` (`A.x=B.y`). Errors
/// (`Err`) are Click's, which stop the tool.
pub fn combine(components: &[Component<'_>], links: &[String]) -> Result<Combined, Vec<String>> {
    let mut errors = Vec::new();
    let mut messages = Vec::new();
    if components.is_empty() {
        return Err(vec!["no routers specified".into()]);
    }
    let names: Vec<String> = components.iter().map(|c| c.name.clone()).collect();
    for n in &names {
        if !legal_name(n) {
            errors.push(format!("router name '{n}' is not a legal Click identifier"));
        }
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(vec![format!("two routers named '{n}'")]);
        }
    }
    let graphs: Vec<Graph> = components
        .iter()
        .map(|c| Graph::from_router(c.router, c.map))
        .collect();
    let mut from: Vec<End> = Vec::new();
    let mut to: Vec<End> = Vec::new();
    for l in links {
        if let Some((a, b)) = parse_link(l, &names, &graphs, &mut errors, &mut messages) {
            from.push(a);
            to.push(b);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // The same element may not be a link's source and another's
    // destination.
    for i in 1..from.len() {
        for j in 0..i {
            if from[i] == to[j] || from[j] == to[i] {
                let (r, e) = from[i];
                errors.push(format!(
                    "router '{}' element '{}' used as both source and destination",
                    names[r], graphs[r].elems[e].name
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Links sharing a source or a destination are one link.
    let mut id: Vec<usize> = (0..from.len()).collect();
    let mut done = false;
    while !done {
        done = true;
        for i in 1..from.len() {
            for j in 0..i {
                if (from[i] == from[j] || to[i] == to[j]) && id[i] != id[j] {
                    id[i] = id[j];
                    done = false;
                }
            }
        }
    }

    // Every component's elements and connections, renamed.
    let mut g = Graph::default();
    let mut slot: Vec<Vec<usize>> = Vec::new();
    for (r, sub) in graphs.iter().enumerate() {
        for req in &sub.requirements {
            if !g.requirements.contains(req) {
                g.requirements.push(req.clone());
            }
        }
        let mut s = vec![usize::MAX; sub.elems.len()];
        for (i, e) in sub.elems.iter().enumerate() {
            if e.live {
                let mut config = e.config.clone();
                // A RouterLink of a combination combined again names its
                // ends' components from the new top.
                if e.class == "RouterLink" {
                    let mut words = argvec(&config);
                    for w in words.iter_mut().step_by(2) {
                        *w = format!("{}/{w}", names[r]);
                    }
                    config = words.join(", ");
                }
                s[i] = g.add_element(Elem::new(
                    &format!("{}/{}", names[r], e.name),
                    &e.class,
                    &config,
                ));
            }
        }
        for c in &sub.conns {
            g.add_connection(
                Port::new(s[c.from.e], c.from.port),
                Port::new(s[c.to.e], c.to.port),
            );
        }
        slot.push(s);
    }
    if from.is_empty() {
        messages.push("warning: no links between routers".into());
    }
    let mut seen = vec![false; from.len()];
    let mut linkno = 0;
    for i in 0..from.len() {
        if seen[id[i]] {
            continue;
        }
        seen[id[i]] = true;
        let mut ins: Vec<End> = Vec::new();
        let mut outs: Vec<End> = Vec::new();
        for j in 0..from.len() {
            if id[j] == id[i] {
                if !ins.contains(&from[j]) {
                    ins.push(from[j]);
                }
                if !outs.contains(&to[j]) {
                    outs.push(to[j]);
                }
            }
        }
        let mut words = Vec::new();
        let mut ends = Vec::new();
        for &(r, e) in ins.iter().chain(&outs) {
            let el = &graphs[r].elems[e];
            words.push(format!("{} {} {}", names[r], el.name, el.class));
            words.push(el.config.clone());
            ends.push(slot[r][e]);
        }
        linkno += 1;
        let link = g.add_element(Elem::new(
            &format!("link{linkno}"),
            "RouterLink",
            &words.join(", "),
        ));
        for (k, &e) in ends.iter().enumerate() {
            if k < ins.len() {
                g.insert_before(Port::new(link, k), Port::new(e, 0));
            } else {
                g.insert_after(Port::new(link, k - ins.len()), Port::new(e, 0));
            }
            g.free_element(e);
        }
    }
    g.remove_tunnels();

    let mut members = Vec::new();
    let nested_links = components
        .iter()
        .any(|c| c.members.iter().any(|m| m.name == "elementmap.xml"));
    if !from.is_empty() || nested_links {
        members.push(routerlink_elementmap());
    }
    let mut map = String::new();
    for (c, n) in components.iter().zip(&names) {
        map.push_str(n);
        map.push('\n');
        if let Some(m) = c.members.iter().find(|m| m.name == "componentmap") {
            for sub in m.data.split_whitespace() {
                map.push_str(&format!("{n}/{sub}\n"));
            }
        }
    }
    members.push(Member::new("componentmap", map, 0o600));
    Ok(Combined {
        config: g.unparse(),
        members,
        messages,
    })
}

/// `click-uncombine`: component `component` of a combined configuration
/// (`members` are its archive's other members). `file` names it in
/// errors.
pub fn uncombine(
    router: &Router,
    map: &SourceMap,
    members: &[Member],
    component: &str,
    file: &str,
) -> Result<Uncombined, Vec<String>> {
    let names: Vec<&str> = members
        .iter()
        .find(|m| m.name == "componentmap")
        .map(|m| m.data.split_whitespace().collect())
        .unwrap_or_default();
    if !names.contains(&component) {
        return Err(vec![format!("{file}: no '{component}' component")]);
    }
    let mut g = Graph::from_router(router, map);
    let mut errors = Vec::new();
    let mut endpoints = Vec::new();

    // The links that touch the component become its ends again.
    let links: Vec<usize> = (0..g.elems.len())
        .filter(|&i| g.elems[i].live && g.elems[i].class == "RouterLink")
        .collect();
    for link in links {
        let link_name = g.elems[link].name.clone();
        let words = argvec(&g.elems[link].config);
        let (nin, nout) = (g.ninputs(link), g.noutputs(link));
        if words.len() != 2 * (nin + nout) || nin == 0 || nout == 0 {
            errors.push(format!(
                "RouterLink '{link_name}' has strange configuration"
            ));
            continue;
        }
        let mut interesting = false;
        let mut bad = false;
        let mut sub = false;
        let mut clauses = Vec::new();
        for w in words.iter().step_by(2) {
            let c: Vec<&str> = w.split_whitespace().collect();
            if c.len() != 3 {
                errors.push(format!(
                    "RouterLink '{link_name}' has strange configuration"
                ));
                bad = true;
                break;
            }
            if c[0] == component {
                interesting = true;
            } else if c[0]
                .strip_prefix(component)
                .is_some_and(|rest| rest.starts_with('/'))
            {
                sub = true;
            }
            clauses.push(c);
        }
        if sub && !bad && !interesting {
            endpoints.push(link);
        }
        if bad || !interesting {
            continue;
        }
        for (k, c) in clauses.iter().enumerate() {
            let full = format!("{}/{}", c[0], c[1]);
            if g.eindex(&full).is_some() {
                errors.push(format!(
                    "RouterLink '{link_name}' element '{full}' already exists"
                ));
            } else if c[0] == component {
                let e = g.get_element(c[1], || Elem::new(c[1], c[2], &words[2 * k + 1]));
                if k < nin {
                    g.insert_before(Port::new(e, 0), Port::new(link, k));
                } else {
                    g.insert_after(Port::new(e, 0), Port::new(link, k - nin));
                }
                endpoints.push(e);
            }
        }
        g.free_element(link);
    }

    // The component: its ends, its elements, and what is connected to
    // them.
    let prefix = format!("{component}/");
    let mut live = vec![false; g.elems.len()];
    for &e in &endpoints {
        live[e] = true;
    }
    for (i, e) in g.elems.iter().enumerate() {
        if e.live && e.name.starts_with(&prefix) {
            live[i] = true;
        }
    }
    let mut changed = true;
    while changed {
        changed = false;
        for c in &g.conns {
            if live[c.from.e] != live[c.to.e] {
                live[c.from.e] = true;
                live[c.to.e] = true;
                changed = true;
            }
        }
    }
    for (i, &l) in live.iter().enumerate() {
        if g.elems[i].live && !l {
            g.kill(i);
        }
    }
    g.kill_bad_connections();
    for (i, &l) in live.iter().enumerate() {
        if !l || !g.elems[i].live {
            continue;
        }
        if let Some(short) = g.elems[i].name.strip_prefix(&prefix).map(str::to_string) {
            if g.eindex(&short).is_none() {
                g.change_ename(i, &short);
            }
        }
    }
    // RouterLinks inside the component name their ends from its top.
    for e in g.elems.iter_mut() {
        if e.live && e.class == "RouterLink" {
            let mut words = argvec(&e.config);
            for w in words.iter_mut().step_by(2) {
                if let Some(rest) = w.strip_prefix(&prefix) {
                    *w = rest.to_string();
                }
            }
            e.config = words.join(", ");
        }
    }
    g.remove_tunnels();
    g.remove_dead_elements();
    if !errors.is_empty() {
        return Err(errors);
    }

    let mut rest: Vec<Member> = members
        .iter()
        .filter(|m| m.name != "componentmap" && m.name != "config")
        .cloned()
        .collect();
    let inner: String = names
        .iter()
        .filter_map(|n| n.strip_prefix(&prefix))
        .map(|n| format!("{n}\n"))
        .collect();
    if !inner.is_empty() {
        let mut m = members
            .iter()
            .find(|m| m.name == "componentmap")
            .cloned()
            .unwrap_or_else(|| Member::new("componentmap", String::new(), 0o600));
        m.data = inner;
        rest.push(m);
    }
    Ok(Uncombined {
        config: g.unparse(),
        members: rest,
        messages: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive;

    fn parse(text: &str) -> (Router, SourceMap) {
        let mut map = SourceMap::default();
        let r = crate::parse(&mut map, crate::Source::from_string(text)).expect("parses");
        (r, map)
    }

    fn combined(parts: &[(&str, &str)], links: &[&str]) -> Combined {
        let parsed: Vec<(Router, SourceMap)> = parts.iter().map(|(_, t)| parse(t)).collect();
        let comps: Vec<Component<'_>> = parts
            .iter()
            .zip(&parsed)
            .map(|((n, _), (r, m))| Component {
                name: n.to_string(),
                router: r,
                map: m,
                members: &[],
            })
            .collect();
        let links: Vec<String> = links.iter().map(|l| l.to_string()).collect();
        combine(&comps, &links).expect("combines")
    }

    fn take(c: &Combined, name: &str) -> Uncombined {
        let (r, m) = parse(&c.config);
        uncombine(&r, &m, &c.members, name, "C").expect("uncombines")
    }

    #[test]
    fn two_routers_joined_at_their_devices_and_taken_apart() {
        let c = combined(
            &[
                ("A", "x::ThisIsA -> y::ToDevice(eth1)"),
                ("B", "x::FromDevice(eth0) -> y::ThisIsB"),
            ],
            &["A.eth1=B.eth0"],
        );
        assert_eq!(
            c.config,
            "A/x :: ThisIsA;\nB/y :: ThisIsB;\n\
             link1 :: RouterLink(A y ToDevice, eth1, B x FromDevice, eth0);\n\
             A/x -> link1\n    -> B/y;\n"
        );
        let map = c
            .members
            .iter()
            .find(|m| m.name == "componentmap")
            .expect("map");
        assert_eq!(map.data, "A\nB\n");
        assert_eq!(
            take(&c, "A").config,
            "x :: ThisIsA;\ny :: ToDevice(eth1);\nx -> y;\n"
        );
        assert_eq!(
            take(&c, "B").config,
            "y :: ThisIsB;\nx :: FromDevice(eth0);\nx -> y;\n"
        );
        // Through an archive, as the tools pass it on.
        let text = archive::join_config(c.config.clone(), &c.members).expect("archive");
        let (config, members) = archive::split_config(&text).expect("reads back");
        assert_eq!(config, c.config);
        assert_eq!(members.len(), 2);
    }

    #[test]
    fn links_sharing_an_end_are_one_routerlink() {
        let c = combined(
            &[
                ("A", "s::Src -> ToDevice(eth0)"),
                ("B", "FromDevice(eth0) -> b::SinkB"),
                ("C", "FromDevice(eth9) -> c::SinkC"),
            ],
            &["A.eth0=B.eth0", "A.eth0=C.eth9"],
        );
        assert!(c.config.contains(
            "link1 :: RouterLink(A ToDevice@2 ToDevice, eth0, B FromDevice@1 FromDevice, eth0, C FromDevice@1 FromDevice, eth9);"
        ), "{}", c.config);
        assert!(!c.config.contains("link2"));
        assert_eq!(
            take(&c, "C").config,
            "c :: SinkC;\nFromDevice@1 :: FromDevice(eth9);\nFromDevice@1 -> c;\n"
        );
    }

    #[test]
    fn combinations_combine_again_and_come_apart_again() {
        let inner = combined(
            &[
                ("A", "x::ThisIsA -> y::ToDevice(eth1)"),
                ("B", "x::FromDevice(eth0) -> y::ToDevice(eth2)"),
            ],
            &["A.eth1=B.eth0"],
        );
        let (ir, im) = parse(&inner.config);
        let (or, om) = parse("FromDevice(eth5) -> z::ThisIsD");
        let comps = [
            Component {
                name: "N".into(),
                router: &ir,
                map: &im,
                members: &inner.members,
            },
            Component {
                name: "D".into(),
                router: &or,
                map: &om,
                members: &[],
            },
        ];
        let c = combine(&comps, &["N.B/y=D.eth5".to_string()]).expect("combines");
        assert!(
            c.config
                .contains("N/link1 :: RouterLink(N/A y ToDevice, eth1, N/B x FromDevice, eth0);"),
            "{}",
            c.config
        );
        let map = c
            .members
            .iter()
            .find(|m| m.name == "componentmap")
            .expect("map");
        assert_eq!(map.data, "N\nN/A\nN/B\nD\n");
        let n = take(&c, "N");
        assert!(
            n.config
                .contains("link1 :: RouterLink(A y ToDevice, eth1, B x FromDevice, eth0);"),
            "{}",
            n.config
        );
        assert!(n.config.contains("B/y :: ToDevice(eth2);"), "{}", n.config);
        assert_eq!(
            n.members
                .iter()
                .find(|m| m.name == "componentmap")
                .map(|m| m.data.as_str()),
            Some("A\nB\n")
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let (a, am) = parse("x::ThisIsA -> ToDevice(eth1); ToDevice(eth1)");
        let (b, bm) = parse("FromDevice(eth0) -> Discard");
        let comps = |n2: &str| {
            vec![
                Component {
                    name: "A".into(),
                    router: &a,
                    map: &am,
                    members: &[],
                },
                Component {
                    name: n2.into(),
                    router: &b,
                    map: &bm,
                    members: &[],
                },
            ]
        };
        let err = |links: &[&str], n2: &str| {
            let l: Vec<String> = links.iter().map(|s| s.to_string()).collect();
            combine(&comps(n2), &l).expect_err("refused")
        };
        assert_eq!(
            err(&["A.eth1=B.eth0"], "B")[0],
            "more than one 'ToDevice(eth1)' element in router 'A'"
        );
        assert_eq!(
            err(&["A.eth1"], "B"),
            vec!["bad link definition 'A.eth1'".to_string()]
        );
        assert_eq!(err(&["Q.x=B.eth0"], "B")[0], "no router named 'Q'");
        assert_eq!(
            err(&["A.x=B.eth7"], "B"),
            vec!["router 'B' has no element or device named 'eth7'".to_string()]
        );
        assert_eq!(err(&[], "A"), vec!["two routers named 'A'".to_string()]);
        assert!(err(&[], "B/")[0].contains("not a legal Click identifier"));
        let c = combined(&[("A", "a::X -> y::Y"), ("B", "b::Z")], &["A.y=B.b"]);
        assert!(c
            .messages
            .iter()
            .any(|m| m.contains("expected ToDevice, got Y")));
        let (r, m) = parse(&c.config);
        assert_eq!(
            uncombine(&r, &m, &c.members, "Q", "C")
                .expect_err("no Q")
                .join(""),
            "C: no 'Q' component"
        );
    }
}
