//! `click-undead`: removes dead code from a configuration, as Click's tool
//! of that name does (`tools/click-undead/click-undead.cc`), step for step
//! so that it prints what Click's prints:
//!
//! 1. StaticSwitch and StaticPullSwitch are replaced by the connection
//!    they select, and Null elements by their neighbours;
//! 2. an element is live when packets can reach it from a source and
//!    leave it for a sink (following each class's flow between its
//!    ports), or when it has no ports at all (an information element);
//!    the others go;
//! 3. schedulers and tees left with one port are bypassed, their empty
//!    ports removed;
//! 4. ports left unconnected that had connections are tied to an Idle.

use super::graph::{Elem, Graph, Port};
use crate::{Router, SourceMap};

/// What `click-undead` made of a configuration.
#[derive(Debug, Clone)]
pub struct Undead {
    /// The configuration without its dead code, as Click's tools print it.
    pub config: String,
    /// Errors and warnings Click's tool prints (a bad StaticSwitch, odd
    /// connections); the configuration is printed all the same.
    pub messages: Vec<String>,
}

/// Whether an element class is a packet source or sink whatever its
/// connections say (Click's `S` flag: 0 neither, 1 source, 2 sink, 3
/// both). Classes not named here are guessed from their connections, as
/// Click guesses for classes without the flag.
fn source_flag(class: &str) -> Option<u8> {
    Some(match class {
        "Idle"
        | "PrioSched"
        | "RoundRobinSched"
        | "StrideSched"
        | "DRRSched"
        | "SimplePrioSched"
        | "SimpleRoundRobinSched"
        | "TimeSortedSched" => 0,
        "InfiniteSource" => 1,
        "ToDump" | "ToIPSummaryDump" | "ToHost" | "ToDevice" => 2,
        "KernelTun" | "KernelTap" | "Socket" | "RawSocket" => 3,
        _ => return None,
    })
}

/// The flow code of a class (Click's `flow_code()`), for the classes
/// whose packets do not flow from every input to every output.
/// ARPQuerier's "xy/x" is left out: its `L2` flag has click-undead treat
/// it as complete.
fn flow_code(class: &str) -> Option<&'static str> {
    Some(match class {
        "Idle" | "KernelTun" | "KernelTap" | "Socket" | "RawSocket" => "x/y",
        "IP6NDSolicitor" => "xy/x",
        "Bypass" => "xy/[xy]x",
        "Hub" | "EtherSwitch" => "#/[^#]",
        "Suppressor" | "AggregatePacketCounter" => "#/#",
        _ => return None,
    })
}

/// One port's code in a flow code: a set of letters, `#` (the port's own
/// number), possibly negated (`[^...]`).
#[derive(Clone, Copy, Debug)]
struct Code {
    letters: u64,
    hash: bool,
    negated: bool,
}

impl Code {
    fn letter_bit(c: char) -> u64 {
        match c {
            'a'..='z' => 1 << (c as u32 - 'a' as u32),
            'A'..='Z' => 1 << (26 + c as u32 - 'A' as u32),
            _ => 0,
        }
    }

    /// Whether the code at port `me` holds the letter with bit `bit`.
    fn has_letter(self, bit: u64) -> bool {
        (self.letters & bit != 0) != self.negated
    }

    /// Whether the code at port `me` holds port `k`'s `#`.
    fn has_port(self, me: usize, k: usize) -> bool {
        (self.hash && me == k) != self.negated
    }
}

/// One side of a flow code, a code a port (the last repeats).
fn parse_side(s: &str) -> Vec<Code> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let mut code = Code {
            letters: 0,
            hash: false,
            negated: false,
        };
        if c == '[' {
            if chars.peek() == Some(&'^') {
                chars.next();
                code.negated = true;
            }
            for c in chars.by_ref() {
                if c == ']' {
                    break;
                }
                code.hash |= c == '#';
                code.letters |= Code::letter_bit(c);
            }
        } else {
            code.hash = c == '#';
            code.letters = Code::letter_bit(c);
        }
        out.push(code);
    }
    out
}

/// Whether packets entering input `i` of a `class` element may leave by
/// output `j`.
fn flows(class: &str, i: usize, j: usize) -> bool {
    let Some((ins, outs)) = flow_code(class).and_then(|c| c.split_once('/')) else {
        return true;
    };
    let (ins, outs) = (parse_side(ins), parse_side(outs));
    let (Some(a), Some(b)) = (
        ins.get(i.min(ins.len().saturating_sub(1))),
        outs.get(j.min(outs.len().saturating_sub(1))),
    ) else {
        return true;
    };
    let letters = (0..52).any(|n| a.has_letter(1 << n) && b.has_letter(1 << n));
    // The port numbers that could be in both: i's, j's, and any other.
    let other = i.max(j) + 1;
    letters
        || [i, j, other]
            .into_iter()
            .any(|k| a.has_port(i, k) && b.has_port(j, k))
}

/// The name Click's `add_anon_element` gives a new element of `class`.
fn anon_name(g: &Graph, class: &str) -> String {
    let mut n = g.elems.iter().filter(|e| e.live).count() + 1;
    loop {
        let name = format!("{class}@{n}");
        if g.eindex(&name).is_none() {
            return name;
        }
        n += 1;
    }
}

fn add_idle(g: &mut Graph) -> usize {
    let name = anon_name(g, "Idle");
    g.add_element(Elem::new(&name, "Idle", ""))
}

fn live_of(g: &Graph, class: &str) -> Vec<usize> {
    (0..g.elems.len())
        .filter(|&e| g.elems[e].live && g.elems[e].class == class)
        .collect()
}

/// The connection (index) on each output port of `e`, `None` for a port
/// with none; the newest when a port has several, and whether it has
/// exactly one (Click's `is_back`).
fn vector_from(g: &Graph, e: usize) -> Vec<Option<(usize, bool)>> {
    (0..g.noutputs(e))
        .map(|p| {
            let v = g.conns_from(Port::new(e, p));
            v.first().map(|&c| (c, v.len() == 1))
        })
        .collect()
}

/// As [`vector_from`], for the input ports.
fn vector_to(g: &Graph, e: usize) -> Vec<Option<(usize, bool)>> {
    (0..g.ninputs(e))
        .map(|p| {
            let v = g.conns_to(Port::new(e, p));
            v.first().map(|&c| (c, v.len() == 1))
        })
        .collect()
}

/// The StaticSwitch or StaticPullSwitch output (input) its arguments
/// choose, or -1 with a message.
fn static_choice(g: &Graph, e: usize, messages: &mut Vec<String>) -> i64 {
    let el = &g.elems[e];
    match crate::args::process(&el.config, None)
        .text
        .trim()
        .parse::<i64>()
    {
        Ok(v) => v,
        Err(_) => {
            messages.push(format!(
                "{}: bad configuration '{}({})'",
                el.name, el.class, el.config
            ));
            -1
        }
    }
}

fn remove_static_switches(g: &mut Graph, messages: &mut Vec<String>) {
    for x in live_of(g, "StaticSwitch") {
        let val = static_choice(g, x, messages);
        let outs = vector_from(g, x);
        if outs.iter().any(|c| !matches!(c, Some((_, true)))) {
            messages.push(format!(
                "odd connections from '{} :: {}'",
                g.elems[x].name, g.elems[x].class
            ));
        }
        let idle = add_idle(g);
        let (mut idle_in, mut idle_out) = (0, 0);
        let chosen = usize::try_from(val)
            .ok()
            .and_then(|v| outs.get(v).copied().flatten().map(|c| (v, c)));
        let hook = match chosen {
            Some((_, (c, true))) => g.conns[c].to,
            _ => {
                idle_in += 1;
                Port::new(idle, idle_in - 1)
            }
        };
        for c in g.conns_to(Port::new(x, 0)) {
            g.change_connection_to(c, hook);
        }
        for (j, c) in outs.iter().enumerate() {
            if i64::try_from(j).ok() != Some(val) {
                if let Some((c, _)) = c {
                    g.change_connection_from(*c, Port::new(idle, idle_out));
                    idle_out += 1;
                }
            }
        }
        g.kill(x);
    }
}

fn remove_static_pull_switches(g: &mut Graph, messages: &mut Vec<String>) {
    for x in live_of(g, "StaticPullSwitch") {
        let val = static_choice(g, x, messages);
        let ins = vector_to(g, x);
        if ins.iter().any(|c| !matches!(c, Some((_, true)))) {
            messages.push(format!(
                "odd connections to '{} :: {}'",
                g.elems[x].name, g.elems[x].class
            ));
        }
        let idle = add_idle(g);
        let (mut idle_in, mut idle_out) = (0, 0);
        let chosen = usize::try_from(val)
            .ok()
            .and_then(|v| ins.get(v).copied().flatten());
        let hook = match chosen {
            Some((c, true)) => g.conns[c].from,
            _ => {
                idle_out += 1;
                Port::new(idle, idle_out - 1)
            }
        };
        for c in g.conns_from(Port::new(x, 0)) {
            g.change_connection_from(c, hook);
        }
        for (j, c) in ins.iter().enumerate() {
            if i64::try_from(j).ok() != Some(val) {
                if let Some((c, _)) = c {
                    g.change_connection_to(*c, Port::new(idle, idle_in));
                    idle_in += 1;
                }
            }
        }
        g.kill(x);
    }
}

/// Every connection from `old` now comes from `new` (a pull path skips
/// an element).
fn skip_over_pull(g: &mut Graph, old: Port, new: Port) {
    for c in g.conns_from(old) {
        g.change_connection_from(c, new);
    }
}

/// Every connection to `old` now goes to `new`.
fn skip_over_push(g: &mut Graph, old: Port, new: Port) {
    for c in g.conns_to(old) {
        g.change_connection_to(c, new);
    }
}

fn remove_nulls(g: &mut Graph, messages: &mut Vec<String>) {
    for x in live_of(g, "Null") {
        let odd = || format!("odd connections to '{} :: Null'", g.elems[x].name);
        if g.ninputs(x) != 1 || g.noutputs(x) != 1 {
            messages.push(format!("warning: {}", odd()));
            continue;
        }
        let prev = g.conns_to(Port::new(x, 0));
        let next = g.conns_from(Port::new(x, 0));
        if prev.len() > 1 && next.len() > 1 {
            messages.push(format!("warning: {}", odd()));
        } else if prev.len() == 1 {
            let from = g.conns[prev[0]].from;
            skip_over_pull(g, Port::new(x, 0), from);
        } else if next.len() == 1 {
            let to = g.conns[next[0]].to;
            skip_over_push(g, Port::new(x, 0), to);
        }
        g.kill(x);
    }
}

/// The live elements: those packets reach from a source and leave for a
/// sink, and those with no ports.
fn find_live(g: &Graph) -> Vec<bool> {
    let n = g.elems.len();
    let mut sources = vec![false; n];
    let mut sinks = vec![false; n];
    // Input ports packets from a source reach, and output ports whose
    // packets reach a sink.
    let mut from_sources: Vec<Port> = Vec::new();
    let mut to_sinks: Vec<Port> = Vec::new();
    for x in (0..n).filter(|&x| g.elems[x].live && !g.elems[x].is_tunnel()) {
        let (nin, nout) = (g.ninputs(x), g.noutputs(x));
        let flag = source_flag(&g.elems[x].class)
            .unwrap_or(u8::from(nin == 0) | (u8::from(nout == 0) << 1));
        if flag & 1 != 0 {
            sources[x] = true;
            for p in 0..nout {
                from_sources.extend(g.targets(Port::new(x, p)));
            }
        }
        if flag & 2 != 0 {
            sinks[x] = true;
            for p in 0..nin {
                to_sinks.extend(g.sources(Port::new(x, p)));
            }
        }
    }
    let reach_in = follow(g, from_sources, true);
    let reach_out = follow(g, to_sinks, false);
    for x in (0..n).filter(|&x| g.elems[x].live && g.elems[x].class != "Idle") {
        sources[x] |= reach_in.iter().any(|p| p.e == x);
        sinks[x] |= reach_out.iter().any(|p| p.e == x);
    }
    (0..n)
        .map(|x| {
            let e = &g.elems[x];
            e.live
                && !e.is_tunnel()
                && ((sources[x] && sinks[x]) || (g.ninputs(x) == 0 && g.noutputs(x) == 0))
        })
        .collect()
}

/// The ports reached from `start`: forward, input ports through each
/// element's flow and on along connections; backward, output ports.
fn follow(g: &Graph, start: Vec<Port>, forward: bool) -> std::collections::BTreeSet<Port> {
    let mut seen: std::collections::BTreeSet<Port> = start.iter().copied().collect();
    let mut work = start;
    while let Some(p) = work.pop() {
        let class = g.elems[p.e].class.as_str();
        let next: Vec<Port> = if forward {
            (0..g.noutputs(p.e))
                .filter(|&j| flows(class, p.port, j))
                .flat_map(|j| g.targets(Port::new(p.e, j)))
                .collect()
        } else {
            (0..g.ninputs(p.e))
                .filter(|&i| flows(class, i, p.port))
                .flat_map(|i| g.sources(Port::new(p.e, i)))
                .collect()
        };
        for q in next {
            if seen.insert(q) {
                work.push(q);
            }
        }
    }
    seen
}

/// Schedulers of `class` left with one input are bypassed; their inputs
/// from nothing or from an Idle are removed first (with their arguments
/// when `config_per_input`). Returns whether one was bypassed.
fn remove_redundant_schedulers(
    g: &mut Graph,
    class: &str,
    config_per_input: bool,
    nports: &mut std::collections::HashMap<String, (usize, usize)>,
    messages: &mut Vec<String>,
) -> bool {
    let mut changed = false;
    for x in live_of(g, class) {
        if g.noutputs(x) != 1 {
            messages.push(format!(
                "warning: odd connections to '{} :: {}'",
                g.elems[x].name, class
            ));
            continue;
        }
        let mut prev = vector_to(g, x);
        let mut args: Vec<String> = Vec::new();
        if config_per_input {
            args = crate::args::split_args(&g.elems[x].config);
            if args.len() != prev.len() {
                continue;
            }
        }
        let mut p = 0;
        while p < prev.len() {
            let empty = match prev[p] {
                None => true,
                Some((c, _)) => g.elems[g.conns[c].from.e].class == "Idle",
            };
            if !empty {
                p += 1;
                continue;
            }
            if config_per_input {
                args.remove(p);
                g.elems[x].config = args.join(", ");
            }
            if let Some((c, _)) = prev[p] {
                g.erase(&[c]);
                prev = vector_to_after_erase(prev, c);
            }
            for (pp, c) in prev.iter().enumerate().skip(p + 1) {
                if let Some((c, _)) = c {
                    g.change_connection_to(*c, Port::new(x, pp - 1));
                }
            }
            prev.remove(p);
        }
        if prev.len() == 1 {
            if let Some((c, _)) = prev[0] {
                let from = g.conns[c].from;
                skip_over_pull(g, Port::new(x, 0), from);
                g.kill(x);
                changed = true;
            }
        }
        nports.entry(g.elems[x].name.clone()).or_default().0 = prev.len();
    }
    changed
}

/// Connection indices after connection `gone` was erased: those above it
/// move down by one.
fn vector_to_after_erase(v: Vec<Option<(usize, bool)>>, gone: usize) -> Vec<Option<(usize, bool)>> {
    v.into_iter()
        .map(|c| match c {
            Some((c, one)) if c > gone => Some((c - 1, one)),
            Some((c, _)) if c == gone => None,
            c => c,
        })
        .collect()
}

/// Tees of `class` lose their unconnected outputs; one left with a single
/// output is bypassed. A Tee's argument becomes its number of outputs.
fn remove_redundant_tee_ports(
    g: &mut Graph,
    class: &str,
    pull: bool,
    nports: &mut std::collections::HashMap<String, (usize, usize)>,
    messages: &mut Vec<String>,
) -> bool {
    let mut changed = false;
    for x in live_of(g, class) {
        if g.ninputs(x) != 1 {
            messages.push(format!(
                "warning: odd connections to '{} :: {}'",
                g.elems[x].name, class
            ));
            continue;
        }
        let mut next = vector_from(g, x);
        let low = usize::from(pull);
        let mut p = next.len();
        while p > low {
            p -= 1;
            // Click's test also asks whether the connection comes from an
            // Idle, which a Tee's own output never does: only ports with
            // no connection go.
            if next[p].is_some() {
                continue;
            }
            for (pp, c) in next.iter().enumerate().skip(p + 1) {
                if let Some((c, _)) = c {
                    g.change_connection_from(*c, Port::new(x, pp - 1));
                }
            }
            next.remove(p);
        }
        if next.len() == 1 {
            if pull {
                if let Some(&c) = g.conns_to(Port::new(x, 0)).first() {
                    let from = g.conns[c].from;
                    skip_over_pull(g, Port::new(x, 0), from);
                }
            } else if let Some((c, _)) = next[0] {
                let to = g.conns[c].to;
                skip_over_push(g, Port::new(x, 0), to);
            }
            g.kill(x);
            changed = true;
        }
        nports.entry(g.elems[x].name.clone()).or_default().1 = next.len();
        g.elems[x].config = next.len().to_string();
    }
    changed
}

/// Ports that had connections and lost them are tied to one new Idle.
fn replace_blank_ports(g: &mut Graph, nports: &std::collections::HashMap<String, (usize, usize)>) {
    let idle = add_idle(g);
    let (mut next_in, mut next_out) = (0, 0);
    for x in 0..g.elems.len() {
        if !g.elems[x].live || g.elems[x].is_tunnel() {
            continue;
        }
        let (nin, nout) = nports
            .get(&g.elems[x].name)
            .copied()
            .unwrap_or((g.ninputs(x), g.noutputs(x)));
        for p in 0..nin {
            if g.conns_to(Port::new(x, p)).is_empty() {
                g.add_connection(Port::new(idle, next_out), Port::new(x, p));
                next_out += 1;
            }
        }
        for p in 0..nout {
            if g.conns_from(Port::new(x, p)).is_empty() {
                g.add_connection(Port::new(x, p), Port::new(idle, next_in));
                next_in += 1;
            }
        }
    }
    if next_in == 0 && next_out == 0 {
        g.kill(idle);
    }
}

/// Removes the dead code of `router` as `click-undead` does. `Err` when
/// no element is live (Click's tool then warns and exits with 1).
pub fn undead(router: &Router, map: &SourceMap) -> Result<Undead, Vec<String>> {
    let mut g = Graph::from_router(router, map);
    let mut messages = Vec::new();
    // The port counts before anything changes: ports that lose their
    // connections get an Idle at the end.
    let mut nports: std::collections::HashMap<String, (usize, usize)> = (0..g.elems.len())
        .filter(|&e| g.elems[e].live)
        .map(|e| (g.elems[e].name.clone(), (g.ninputs(e), g.noutputs(e))))
        .collect();
    remove_static_switches(&mut g, &mut messages);
    remove_static_pull_switches(&mut g, &mut messages);
    remove_nulls(&mut g, &mut messages);
    g.remove_dead_elements();
    let live = find_live(&g);
    let any = g.elems.iter().any(|e| e.live && !e.is_tunnel());
    if any && !live.iter().any(|&l| l) {
        messages.push("warning: no live elements in configuration".into());
        return Err(messages);
    }
    for (x, l) in live.into_iter().enumerate() {
        if !l {
            g.kill(x);
        }
    }
    g.kill_bad_connections();
    loop {
        let mut changed = false;
        for (class, per_input) in [
            ("RoundRobinSched", false),
            ("PrioSched", false),
            ("StrideSched", true),
        ] {
            changed |=
                remove_redundant_schedulers(&mut g, class, per_input, &mut nports, &mut messages);
        }
        changed |= remove_redundant_tee_ports(&mut g, "Tee", false, &mut nports, &mut messages);
        changed |= remove_redundant_tee_ports(&mut g, "PullTee", true, &mut nports, &mut messages);
        if !changed {
            break;
        }
    }
    replace_blank_ports(&mut g, &nports);
    g.remove_dead_elements();
    Ok(Undead {
        config: g.unparse(),
        messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> String {
        let mut map = SourceMap::default();
        let r = crate::parse(&mut map, crate::Source::from_string(text)).expect("parses");
        undead(&r, &map).expect("live").config
    }

    #[test]
    fn flow_codes_as_click_reads_them() {
        // Complete flow for a class without a code.
        assert!(flows("Counter", 0, 0));
        // Idle: nothing flows.
        assert!(!flows("Idle", 0, 0));
        // ARP replies (input 1) do not leave by output 0 of IP6NDSolicitor.
        assert!(flows("IP6NDSolicitor", 0, 0));
        assert!(!flows("IP6NDSolicitor", 1, 0));
        // A hub sends to every port but the one a packet came in on.
        assert!(!flows("Hub", 2, 2));
        assert!(flows("Hub", 2, 1));
        assert!(flows("Suppressor", 1, 1));
        assert!(!flows("Suppressor", 1, 0));
        // Bypass ("xy/[xy]x"): input 0 to both outputs, input 1 (the
        // bypass path back) to output 0 only.
        assert!(flows("Bypass", 0, 0) && flows("Bypass", 0, 1) && flows("Bypass", 1, 0));
        assert!(!flows("Bypass", 1, 1));
    }

    #[test]
    fn static_switches_idle_paths_and_one_input_schedulers_go() {
        let out = run("Idle -> Counter -> td1 :: ToDump(a);\n\
             is :: InfiniteSource -> ss :: StaticSwitch(1);\n\
             ss[0] -> ToDump(c);\n\
             ss[1] -> q :: Queue -> rr :: RoundRobinSched;\n\
             Idle -> [1]rr;\n\
             rr -> td2 :: ToDump(b);\n");
        assert_eq!(
            out,
            "is :: InfiniteSource;\nq :: Queue;\ntd2 :: ToDump(b);\nis -> q\n    -> td2;\n"
        );
    }

    #[test]
    fn live_paths_stay_whole() {
        let out = run("fa::FromDevice(a) -> arpq::ARPQuerier -> td::ToDump;\n\
             fb::FromDevice(b) -> [1]arpq;\n");
        assert_eq!(
            out,
            "fa :: FromDevice(a);\narpq :: ARPQuerier;\ntd :: ToDump;\nfb :: FromDevice(b);\n\
             fa -> arpq\n    -> td;\nfb -> [1] arpq;\n"
        );
    }

    #[test]
    fn nulls_and_tees_are_bypassed_and_information_elements_kept() {
        let out = run("AddressInfo(a 10.0.0.1);\n\
             s :: InfiniteSource -> Null -> t :: Tee -> d :: Discard;\n\
             t[1] -> p :: Print -> e :: Discard;\n\
             s2 :: InfiniteSource -> u :: Tee(2) -> d2 :: Discard;\n\
             u[1] -> Idle;\n");
        assert!(out.contains("AddressInfo"), "{out}");
        assert!(!out.contains("Null"), "{out}");
        // A Tee's argument becomes its number of outputs.
        assert!(out.contains("t :: Tee(2);"), "{out}");
        assert!(!out.contains("u ::"), "{out}");
        assert!(out.contains("s -> t\n    -> d;"), "{out}");
        assert!(out.contains("s2 -> d2;"), "{out}");
    }

    #[test]
    fn a_configuration_with_nothing_live_is_refused() {
        let mut map = SourceMap::default();
        let r = crate::parse(&mut map, crate::Source::from_string("Idle -> Discard;")).unwrap();
        let e = undead(&r, &map).unwrap_err();
        assert!(e.iter().any(|m| m.contains("no live elements")), "{e:?}");
    }
}
