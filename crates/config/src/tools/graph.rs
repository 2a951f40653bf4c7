//! The configuration graph as Click's tools edit it (`tools/lib/routert.cc`):
//! numbered element slots that freed elements leave for new ones, a list
//! of connections in the order they were made, and per-element lists of
//! connections, newest first. `click-xform` and `click-align` print their
//! results in the order these structures give, so bricks keeps the same
//! structures to print what Click prints.

use crate::args::process;
use crate::{click_order, ElementDecl, Router, SourceMap};
use std::collections::HashMap;
use std::fmt::Write as _;

/// One port of one element slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Port {
    pub e: usize,
    pub port: usize,
}

impl Port {
    pub fn new(e: usize, port: usize) -> Port {
        Port { e, port }
    }
}

/// An element slot.
#[derive(Clone, Debug)]
pub(crate) struct Elem {
    pub name: String,
    /// Element class; empty for a connection tunnel (a compound's `input`
    /// and `output`, or the ends of a compound being expanded).
    pub class: String,
    pub config: String,
    pub live: bool,
    /// For tunnels: the tunnel element this one passes connections to
    /// (Click's `tunnel_output`) and from (`tunnel_input`).
    pub tunnel_out: Option<usize>,
    pub tunnel_in: Option<usize>,
    /// `click-xform`: the number of the pattern whose replacement made
    /// the element (0: the element was in the configuration read).
    pub flags: usize,
    /// `click-align`: the element was added by the tool.
    pub added: bool,
}

impl Elem {
    pub fn new(name: &str, class: &str, config: &str) -> Elem {
        Elem {
            name: name.to_string(),
            class: class.to_string(),
            config: config.to_string(),
            live: true,
            tunnel_out: None,
            tunnel_in: None,
            flags: 0,
            added: false,
        }
    }

    pub fn tunnel(name: &str) -> Elem {
        Elem::new(name, "", "")
    }

    pub fn is_tunnel(&self) -> bool {
        self.class.is_empty()
    }
}

/// A connection. The stamps order the per-element lists: the highest
/// stamp comes first, as Click pushes a connection at the head of its
/// element's list when it is made or moved.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Conn {
    pub from: Port,
    pub to: Port,
    from_stamp: u64,
    to_stamp: u64,
}

/// Click's `RouterT`, for the tools.
#[derive(Clone, Debug, Default)]
pub(crate) struct Graph {
    pub elems: Vec<Elem>,
    /// Connections in the order they were made.
    pub conns: Vec<Conn>,
    names: HashMap<String, usize>,
    /// Freed slots; the last one freed is reused first.
    free: Vec<usize>,
    stamp: u64,
    /// Slots given to new elements while set (Click's
    /// `new_eindex_collector`).
    pub collector: Option<Vec<usize>>,
    pub requirements: Vec<String>,
}

/// The element's arguments as the file has them, as Click's tools keep
/// them, unless expansion substituted variables.
fn config_as_written(e: &ElementDecl, map: &SourceMap) -> String {
    let span = e.config_span;
    if let Some(raw) = map
        .get(span.file)
        .and_then(|s| s.text.get(span.start..span.end))
    {
        if !raw.is_empty() && *process(raw, None).text == *e.config {
            return raw.to_string();
        }
    }
    e.config.to_string()
}

impl Graph {
    /// The configuration as Click's tools read it: elements in the order
    /// Click's lexer creates them, connections as written, arguments as
    /// written (comments included) where no variable was substituted.
    pub fn from_router(router: &Router, map: &SourceMap) -> Graph {
        let mut g = Graph {
            requirements: router.requirements.clone(),
            ..Graph::default()
        };
        let order = click_order(router);
        let mut slot = vec![0; router.elements.len()];
        for &i in &order {
            let e = &router.elements[i];
            slot[i] = g.add_element(Elem::new(&e.name, &e.class, &config_as_written(e, map)));
        }
        for c in &router.connections {
            g.add_connection(
                Port::new(slot[c.from], c.from_port),
                Port::new(slot[c.to], c.to_port),
            );
        }
        g
    }

    fn next_stamp(&mut self) -> u64 {
        self.stamp += 1;
        self.stamp
    }

    /// Puts `e` in a free slot, or a new one.
    pub fn add_element(&mut self, e: Elem) -> usize {
        let name = e.name.clone();
        let i = match self.free.pop() {
            Some(i) => {
                self.elems[i] = e;
                i
            }
            None => {
                self.elems.push(e);
                self.elems.len() - 1
            }
        };
        if let Some(c) = &mut self.collector {
            c.push(i);
        }
        self.names.insert(name, i);
        i
    }

    /// The live element named `name`, or a new one made from `make`.
    pub fn get_element(&mut self, name: &str, make: impl FnOnce() -> Elem) -> usize {
        match self.eindex(name) {
            Some(i) => i,
            None => self.add_element(make()),
        }
    }

    pub fn eindex(&self, name: &str) -> Option<usize> {
        self.names
            .get(name)
            .copied()
            .filter(|&i| self.elems[i].live && self.elems[i].name == name)
    }

    pub fn change_ename(&mut self, i: usize, name: &str) {
        if !self.elems[i].live {
            return;
        }
        if self.names.get(&self.elems[i].name) == Some(&i) {
            self.names.remove(&self.elems[i].name);
        }
        self.elems[i].name = name.to_string();
        self.names.insert(name.to_string(), i);
    }

    /// Connects `from` to `to` unless they are connected already.
    pub fn add_connection(&mut self, from: Port, to: Port) -> bool {
        if self.has_connection(from, to) {
            return false;
        }
        let (from_stamp, to_stamp) = (self.next_stamp(), self.next_stamp());
        self.conns.push(Conn {
            from,
            to,
            from_stamp,
            to_stamp,
        });
        true
    }

    pub fn has_connection(&self, from: Port, to: Port) -> bool {
        self.conns.iter().any(|c| c.from == from && c.to == to)
    }

    /// Indices into `conns` of the connections from `p`, as Click's
    /// per-element list gives them (newest first).
    pub fn conns_from(&self, p: Port) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.conns.len())
            .filter(|&c| self.conns[c].from == p)
            .collect();
        v.sort_by_key(|&c| std::cmp::Reverse(self.conns[c].from_stamp));
        v
    }

    /// Indices into `conns` of the connections to `p`, newest first.
    pub fn conns_to(&self, p: Port) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.conns.len())
            .filter(|&c| self.conns[c].to == p)
            .collect();
        v.sort_by_key(|&c| std::cmp::Reverse(self.conns[c].to_stamp));
        v
    }

    /// What `p` (an output) is connected to, newest first.
    pub fn targets(&self, p: Port) -> Vec<Port> {
        self.conns_from(p)
            .into_iter()
            .map(|c| self.conns[c].to)
            .collect()
    }

    /// What is connected to `p` (an input), newest first.
    pub fn sources(&self, p: Port) -> Vec<Port> {
        self.conns_to(p)
            .into_iter()
            .map(|c| self.conns[c].from)
            .collect()
    }

    pub fn ninputs(&self, e: usize) -> usize {
        self.conns
            .iter()
            .filter(|c| c.to.e == e)
            .map(|c| c.to.port + 1)
            .max()
            .unwrap_or(0)
    }

    pub fn noutputs(&self, e: usize) -> usize {
        self.conns
            .iter()
            .filter(|c| c.from.e == e)
            .map(|c| c.from.port + 1)
            .max()
            .unwrap_or(0)
    }

    /// Moves connection `c` to start at `p`.
    pub fn change_connection_from(&mut self, c: usize, p: Port) {
        let s = self.next_stamp();
        self.conns[c].from = p;
        self.conns[c].from_stamp = s;
    }

    /// Moves connection `c` to end at `p`.
    pub fn change_connection_to(&mut self, c: usize, p: Port) {
        let s = self.next_stamp();
        self.conns[c].to = p;
        self.conns[c].to_stamp = s;
    }

    /// Puts `inserter` (its output to `h`, an input) in front of `h`: the
    /// other connections into `h` go into `inserter` instead (Click's
    /// `RouterT::insert_before`).
    pub fn insert_before(&mut self, inserter: Port, h: Port) -> bool {
        if !self.add_connection(inserter, h) {
            return false;
        }
        for c in self.conns_to(h) {
            if self.conns[c].from != inserter {
                self.change_connection_to(c, inserter);
            }
        }
        true
    }

    /// Puts `inserter` (an input fed by `h`, an output) behind `h`: the
    /// other connections out of `h` leave `inserter` instead (Click's
    /// `RouterT::insert_after`).
    pub fn insert_after(&mut self, inserter: Port, h: Port) -> bool {
        if !self.add_connection(h, inserter) {
            return false;
        }
        for c in self.conns_from(h) {
            if self.conns[c].to != inserter {
                self.change_connection_from(c, inserter);
            }
        }
        true
    }

    /// Removes the connections whose indices are in `gone` (sorted).
    pub fn erase(&mut self, gone: &[usize]) {
        let mut k = 0;
        let mut i = 0;
        self.conns.retain(|_| {
            let keep = !(k < gone.len() && gone[k] == i);
            if !keep {
                k += 1;
            }
            i += 1;
            keep
        });
    }

    /// Removes an element and its connections and frees its slot.
    pub fn free_element(&mut self, e: usize) {
        self.conns.retain(|c| c.from.e != e && c.to.e != e);
        self.kill(e);
        self.free.push(e);
    }

    /// Marks an element dead; its connections stay until
    /// [`Graph::kill_bad_connections`].
    pub fn kill(&mut self, e: usize) {
        if self.names.get(&self.elems[e].name) == Some(&e) {
            self.names.remove(&self.elems[e].name);
        }
        self.elems[e].live = false;
    }

    pub fn kill_bad_connections(&mut self) {
        let elems = &self.elems;
        self.conns
            .retain(|c| elems[c.from.e].live && elems[c.to.e].live);
    }

    /// Frees the slots of dead elements not freed yet, in slot order.
    fn free_dead_elements(&mut self) {
        self.kill_bad_connections();
        for i in 0..self.elems.len() {
            if !self.elems[i].live && !self.free.contains(&i) {
                self.free.push(i);
            }
        }
    }

    /// Drops dead elements and renumbers the others in order.
    pub fn remove_dead_elements(&mut self) {
        self.kill_bad_connections();
        let mut new_index = vec![usize::MAX; self.elems.len()];
        let mut j = 0;
        for (i, e) in self.elems.iter().enumerate() {
            if e.live {
                new_index[i] = j;
                j += 1;
            }
        }
        if j == self.elems.len() {
            return;
        }
        let old = std::mem::take(&mut self.elems);
        self.elems = old.into_iter().filter(|e| e.live).collect();
        for c in &mut self.conns {
            c.from.e = new_index[c.from.e];
            c.to.e = new_index[c.to.e];
        }
        for e in &mut self.elems {
            e.tunnel_in = e
                .tunnel_in
                .map(|t| new_index[t])
                .filter(|&t| t != usize::MAX);
            e.tunnel_out = e
                .tunnel_out
                .map(|t| new_index[t])
                .filter(|&t| t != usize::MAX);
        }
        self.names = self
            .elems
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        self.free.clear();
    }

    /// Makes tunnel elements `from` and `to` a pair: connections into
    /// `from` continue out of `to`.
    pub fn add_tunnel(&mut self, from: &str, to: &str) {
        let a = self.get_element(from, || Elem::tunnel(from));
        let b = self.get_element(to, || Elem::tunnel(to));
        if self.elems[a].is_tunnel() && self.elems[b].is_tunnel() {
            self.elems[a].tunnel_out = Some(b);
            self.elems[b].tunnel_in = Some(a);
        }
    }

    /// Replaces connections through tunnel pairs by direct connections
    /// and removes the paired tunnels (Click's `RouterT::remove_tunnels`).
    pub fn remove_tunnels(&mut self) {
        // Tunnel outputs that connections leave from, in connection order.
        let mut outputs: Vec<Port> = Vec::new();
        for c in &self.conns {
            let f = &self.elems[c.from.e];
            if f.is_tunnel() && f.tunnel_in.is_some() && !outputs.contains(&c.from) {
                outputs.push(c.from);
            }
        }
        #[derive(Clone)]
        enum Exp {
            NotYet,
            Expanding,
            Done(Vec<Port>),
        }
        let mut exps = vec![Exp::NotYet; outputs.len()];
        fn expand(g: &Graph, outputs: &[Port], exps: &mut Vec<Exp>, which: usize) {
            if !matches!(exps[which], Exp::NotYet) {
                return;
            }
            exps[which] = Exp::Expanding;
            let me = outputs[which];
            let Some(other) = g.elems[me.e].tunnel_in else {
                exps[which] = Exp::Done(Vec::new());
                return;
            };
            let mut store = Vec::new();
            for src in g.sources(Port::new(other, me.port)) {
                if g.elems[src.e].is_tunnel() {
                    if let Some(x) = outputs.iter().position(|&o| o == src) {
                        expand(g, outputs, exps, x);
                        if let Exp::Done(v) = &exps[x] {
                            store.extend(v.iter().copied());
                        }
                        continue;
                    }
                }
                store.push(src);
            }
            exps[which] = Exp::Done(store);
        }
        for i in 0..outputs.len() {
            expand(self, &outputs, &mut exps, i);
        }
        let n = self.conns.len();
        for ci in 0..n {
            let c = self.conns[ci];
            if !self.elems[c.from.e].is_tunnel() || self.elems[c.to.e].is_tunnel() {
                continue;
            }
            let Some(x) = outputs.iter().position(|&o| o == c.from) else {
                continue;
            };
            if let Exp::Done(v) = exps[x].clone() {
                for src in v {
                    self.add_connection(src, c.to);
                }
            }
        }
        for i in 0..self.elems.len() {
            let e = &self.elems[i];
            if e.live && e.is_tunnel() && (e.tunnel_out.is_some() || e.tunnel_in.is_some()) {
                self.kill(i);
            }
        }
        self.free_dead_elements();
    }

    /// Click's `RouterT::remove_duplicate_connections`: of connections
    /// with the same ends, the newest in its element's list stays.
    pub fn remove_duplicate_connections(&mut self) {
        let mut gone = Vec::new();
        for e in 0..self.elems.len() {
            let mut list: Vec<usize> = (0..self.conns.len())
                .filter(|&c| self.conns[c].from.e == e)
                .collect();
            list.sort_by_key(|&c| std::cmp::Reverse(self.conns[c].from_stamp));
            for (k, &trav) in list.iter().enumerate() {
                let t = self.conns[trav];
                if list[..k].iter().any(|&d| {
                    !gone.contains(&d) && self.conns[d].from == t.from && self.conns[d].to == t.to
                }) {
                    gone.push(trav);
                }
            }
        }
        gone.sort_unstable();
        self.erase(&gone);
    }

    /// The configuration as Click's tools print it
    /// (`RouterT::unparse`): requirements, declarations of live
    /// elements in slot order, then the connections in chains.
    pub fn unparse(&self) -> String {
        let mut sa = String::new();
        if !self.requirements.is_empty() {
            let _ = writeln!(sa, "require({});\n", self.requirements.join(", "));
        }
        for e in &self.elems {
            if !e.live || e.is_tunnel() {
                continue;
            }
            let _ = write!(sa, "{} :: {}", e.name, e.class);
            if !e.config.is_empty() {
                let _ = write!(sa, "({})", e.config);
            }
            sa.push_str(";\n");
        }
        let conns = &self.conns;
        let nc = conns.len();
        let mut next: Vec<Option<usize>> = vec![None; nc];
        let mut startchain = vec![true; nc];
        for c in 0..nc {
            let ht = conns[c].to;
            if ht.port != 0 {
                continue;
            }
            let mut result = None;
            for (d, cd) in conns.iter().enumerate() {
                if d != c && cd.from == ht {
                    result = Some(d);
                    if cd.to.port == 0 {
                        break;
                    }
                }
            }
            if let Some(d) = result {
                next[c] = Some(d);
                startchain[d] = false;
            }
        }
        let name = |p: Port| self.elems[p.e].name.as_str();
        let mut used = vec![false; nc];
        loop {
            for c in 0..nc {
                if used[c] || !startchain[c] {
                    continue;
                }
                let hf = conns[c].from;
                sa.push_str(name(hf));
                if hf.port != 0 {
                    let _ = write!(sa, " [{}]", hf.port);
                }
                let mut d = Some(c);
                while let Some(di) = d.filter(|&di| !used[di]) {
                    sa.push_str(if di == c { " -> " } else { "\n    -> " });
                    let ht = conns[di].to;
                    if ht.port != 0 {
                        let _ = write!(sa, "[{}] ", ht.port);
                    }
                    sa.push_str(name(ht));
                    used[di] = true;
                    d = next[di];
                }
                sa.push_str(";\n");
            }
            match (0..nc).find(|&c| !used[c]) {
                Some(c) => startchain[c] = true,
                None => return sa,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(text: &str) -> Graph {
        let mut map = crate::SourceMap::default();
        let r = crate::parse(&mut map, crate::Source::from_string(text)).expect("parses");
        Graph::from_router(&r, &map)
    }

    #[test]
    fn chains_follow_the_order_connections_were_made() {
        let g = graph("a :: A; b :: B; c :: C; a -> b -> c; a[1] -> c;");
        assert_eq!(
            g.unparse(),
            "a :: A;\nb :: B;\nc :: C;\na -> b\n    -> c;\na [1] -> c;\n"
        );
    }

    #[test]
    fn freed_slots_are_reused_last_freed_first() {
        let mut g = graph("a :: A; b :: B; c :: C; a -> b -> c;");
        g.free_element(0);
        g.free_element(1);
        let x = g.add_element(Elem::new("x", "X", ""));
        let y = g.add_element(Elem::new("y", "Y", "1"));
        assert_eq!((x, y), (1, 0));
        assert_eq!(g.unparse(), "y :: Y(1);\nx :: X;\nc :: C;\n");
        g.remove_dead_elements();
        assert_eq!(g.eindex("c"), Some(2));
    }

    #[test]
    fn tunnels_are_spliced_out() {
        let mut g = graph("a :: A; b :: B; c :: C;");
        g.add_tunnel("t", "t/input");
        let t = g.eindex("t").expect("t");
        let ti = g.eindex("t/input").expect("t/input");
        g.add_connection(Port::new(0, 0), Port::new(t, 0));
        g.add_connection(Port::new(1, 0), Port::new(t, 0));
        g.add_connection(Port::new(ti, 0), Port::new(2, 1));
        g.remove_tunnels();
        // Sources come newest first, as Click's per-element lists give them.
        assert_eq!(
            g.unparse(),
            "a :: A;\nb :: B;\nc :: C;\nb -> [1] c;\na -> [1] c;\n"
        );
        assert_eq!(g.free.len(), 2);
    }

    #[test]
    fn duplicate_connections_leave_one() {
        let mut g = graph("a :: A; b :: B; c :: C; a -> b; c -> b;");
        g.change_connection_from(1, Port::new(0, 0));
        g.remove_duplicate_connections();
        assert_eq!(g.conns.len(), 1);
        assert_eq!(g.ninputs(1), 1);
        assert_eq!(g.noutputs(2), 0);
    }
}
