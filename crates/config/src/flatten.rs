//! The flattened configuration, as Click prints it (`click -o`, the
//! `flatconfig` handler, `click-flatten`): `require` statements, one
//! declaration per element, then the connections in chains.

use crate::Router;
use std::fmt::Write as _;

/// The elements in the order Click's lexer gives them to the router:
/// the top level's own elements first, then each compound element's
/// contents appended when it is expanded, depth first (Click's
/// `Lexer::create_router` and `Compound::expand_into`).
pub fn click_order(router: &Router) -> Vec<usize> {
    #[derive(Default)]
    struct Node {
        name: String,
        leaves_and_compounds: Vec<Child>,
    }
    enum Child {
        Leaf(usize),
        Compound(Node),
    }
    fn insert(node: &mut Node, path: &[&str], index: usize) {
        if path.len() == 1 {
            node.leaves_and_compounds.push(Child::Leaf(index));
            return;
        }
        let pos = node
            .leaves_and_compounds
            .iter()
            .position(|c| matches!(c, Child::Compound(n) if n.name == path[0]));
        let i = match pos {
            Some(i) => i,
            None => {
                node.leaves_and_compounds.push(Child::Compound(Node {
                    name: path[0].to_string(),
                    leaves_and_compounds: Vec::new(),
                }));
                node.leaves_and_compounds.len() - 1
            }
        };
        if let Child::Compound(n) = &mut node.leaves_and_compounds[i] {
            insert(n, &path[1..], index);
        }
    }
    fn expand(node: &Node, out: &mut Vec<usize>) {
        for c in &node.leaves_and_compounds {
            if let Child::Leaf(i) = c {
                out.push(*i);
            }
        }
        for c in &node.leaves_and_compounds {
            if let Child::Compound(n) = c {
                expand(n, out);
            }
        }
    }
    let mut root = Node::default();
    for (i, e) in router.elements.iter().enumerate() {
        let path: Vec<&str> = e.name.split('/').collect();
        insert(&mut root, &path, i);
    }
    let mut out = Vec::with_capacity(router.elements.len());
    expand(&root, &mut out);
    out
}

/// Click's `Router::unparse` of `router`.
pub fn flatten(router: &Router) -> String {
    let mut sa = String::new();
    if !router.requirements.is_empty() {
        let _ = writeln!(sa, "require({});\n", router.requirements.join(", "));
    }
    let order = click_order(router);
    // Position of each element in Click's order.
    let mut rank = vec![0usize; router.elements.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    for &i in &order {
        let e = &router.elements[i];
        let _ = write!(sa, "{} :: {}", e.name, e.class);
        if !e.config.is_empty() {
            let _ = write!(sa, "({})", e.config);
        }
        sa.push_str(";\n");
    }
    if !order.is_empty() {
        sa.push('\n');
    }
    // Connections as Click's router keeps them: (to, from) pairs sorted by
    // destination then source, duplicates dropped.
    let mut conn: Vec<((usize, usize), (usize, usize))> = router
        .connections
        .iter()
        .map(|c| ((rank[c.to], c.to_port), (rank[c.from], c.from_port)))
        .collect();
    conn.sort();
    conn.dedup();
    let name = |r: usize| router.elements[order[r]].name.as_str();
    let nc = conn.len();
    let mut next: Vec<Option<usize>> = vec![None; nc];
    let mut startchain = vec![true; nc];
    for ci in 0..nc {
        let ht = conn[ci].0;
        if ht.1 != 0 {
            continue;
        }
        // The connection leaving the same element's output 0 continues
        // the chain; one into an input 0 is preferred.
        let mut result = None;
        for (d, c) in conn.iter().enumerate() {
            if d != ci && c.1 == ht {
                result = Some(d);
                if c.0 .1 == 0 {
                    break;
                }
            }
        }
        if let Some(d) = result {
            next[ci] = Some(d);
            startchain[d] = false;
        }
    }
    let mut used = vec![false; nc];
    loop {
        for ci in 0..nc {
            if used[ci] || !startchain[ci] {
                continue;
            }
            let hf = conn[ci].1;
            sa.push_str(name(hf.0));
            if hf.1 != 0 {
                let _ = write!(sa, " [{}]", hf.1);
            }
            let mut d = Some(ci);
            while let Some(di) = d.filter(|&di| !used[di]) {
                if di == ci {
                    sa.push_str(" -> ");
                } else {
                    sa.push_str("\n    -> ");
                }
                let ht = conn[di].0;
                if ht.1 != 0 {
                    let _ = write!(sa, "[{}] ", ht.1);
                }
                sa.push_str(name(ht.0));
                used[di] = true;
                d = next[di];
            }
            sa.push_str(";\n");
        }
        // Cycles have no start: begin one at each connection left.
        let mut done = true;
        for ci in 0..nc {
            if !used[ci] {
                startchain[ci] = true;
                done = false;
                break;
            }
        }
        if done {
            return sa;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{parse, Source, SourceMap};

    fn flat(text: &str) -> String {
        let mut map = SourceMap::default();
        let r = parse(
            &mut map,
            Source {
                name: "t".into(),
                text: text.into(),
            },
        )
        .expect("parses");
        super::flatten(&r)
    }

    #[test]
    fn chains_follow_output_zero_and_sort_by_destination() {
        assert_eq!(
            flat("a, b, c :: Idle; p, q :: PullNull; a, a[1] -> b -> p, q; p -> [0]c, [1]c; q -> [2]c;"),
            "a :: Idle;\nb :: Idle;\nc :: Idle;\np :: PullNull;\nq :: PullNull;\n\n\
             a -> b\n    -> p\n    -> c;\na [1] -> b;\np -> [1] c;\nb -> q\n    -> [2] c;\n"
        );
    }

    #[test]
    fn compound_contents_come_after_the_top_level() {
        let text = "elementclass Foo { input -> Print(x) -> output }\n\
                    InfiniteSource(LIMIT 1) -> Foo -> f :: Foo -> Discard";
        assert_eq!(
            flat(text),
            "InfiniteSource@1 :: InfiniteSource(LIMIT 1);\nDiscard@4 :: Discard;\n\
             Foo@2/Print@1 :: Print(x);\nf/Print@1 :: Print(x);\n\n\
             InfiniteSource@1 -> Foo@2/Print@1\n    -> f/Print@1\n    -> Discard@4;\n"
        );
    }

    #[test]
    fn cycles_and_requirements() {
        assert_eq!(
            flat("require(compact_config); a, b :: Null; a -> b -> a;"),
            "require(compact_config);\n\na :: Null;\nb :: Null;\n\nb -> a\n    -> b;\n"
        );
    }
}
