//! Click's notifier signals as text, for `NotifierDebug`'s `signal`
//! handler: which queues' "empty" or "full" notifiers a pull input or a
//! push output listens to, named the way Click names them.
//!
//! bricks' tasks do not sleep on notifiers (they run on and find nothing),
//! so there are no signal words to read; what Click would print is
//! worked out from the graph when the handler is read:
//!
//! - Click's router hands out signals by name ("empty", "full") as bits
//!   of 32-bit words, 4,096 to a group, in the order elements ask for
//!   them: the queues, the sources and DRRSched when they are configured,
//!   PullSwitch and the pull-mode file readers when they are initialized
//!   (`Router::new_notifier_signal`). Signal `n` of a name is bit `n % 32`
//!   of word `n / 32`, printed `empty.W/MASK:VALUE`, with `*` when a bit
//!   of the value is set (some queue has packets, some queue has room).
//! - A pull input's signal combines the "empty" notifiers found upstream,
//!   a push output's the "full" notifiers downstream
//!   (`Notifier::upstream_empty_signal`, `downstream_full_signal`): the
//!   search stops at a notifier, passes through other elements, and
//!   gives up ("busy*": may always be active) where it crosses between
//!   push and pull or reaches an element with nowhere further to go.
//!   `Idle` is the idle signal, which adds nothing ("idle" alone).
//!
//! Everything here walks the graph: for handlers, never per packet.

use super::{Edge, Graph};
use std::collections::{BTreeMap, HashSet};

/// Signals of one name in one of Click's groups.
const GROUP: usize = 4096;

/// The Click classes whose notifiers take a signal when the element is
/// configured, with their names in the order they are asked for
/// (FullNoteQueue's full notifier before NotifierQueue's empty one).
const AT_CONFIGURE: &[(&str, &[&str])] = &[
    ("Queue", &["full", "empty"]),
    ("FullNoteQueue", &["full", "empty"]),
    ("QuickNoteQueue", &["full", "empty"]),
    ("ThreadSafeQueue", &["full", "empty"]),
    ("MSQueue", &["full", "empty"]),
    ("NotifierQueue", &["empty"]),
    ("MixedQueue", &["empty"]),
    ("FrontDropQueue", &["empty"]),
    ("InfiniteSource", &["empty"]),
    ("RandomSource", &["empty"]),
    ("DelayShaper", &["empty"]),
    ("DRRSched", &["empty"]),
    ("TimeSortedSched", &["empty"]),
    ("UpstreamNotifier", &["full"]),
];

/// The classes whose notifier takes its signal when the element is
/// initialized; the file readers only when their output is pull.
const AT_INITIALIZE: &[(&str, bool)] = &[
    ("PullSwitch", false),
    ("FromDump", true),
    ("FromIPSummaryDump", true),
    ("FromTcpdump", true),
    ("FromNetFlowSummaryDump", true),
    ("FromCapDump", true),
];

/// A signal being put together, as Click's `NotifierSignal` adds them.
enum Signal {
    /// Never active: nothing found (or only `Idle`).
    Idle,
    /// Always possibly active: the search could not tell.
    Busy,
    /// Bits of signal words: (name, word) -> (mask, active bits).
    Words(BTreeMap<(String, usize), (u32, u32)>),
}

impl Signal {
    fn add(&mut self, name: &str, n: usize, active: bool) {
        let bit = 1u32 << (n % 32);
        let group = n / GROUP;
        let name = if group == 0 {
            name.to_string()
        } else {
            format!("{name}{}", group + 1)
        };
        let key = (name, (n % GROUP) / 32);
        match self {
            Signal::Busy => {}
            Signal::Idle => {
                *self = Signal::Words(BTreeMap::from([(key, (bit, if active { bit } else { 0 }))]));
            }
            Signal::Words(w) => {
                let e = w.entry(key).or_insert((0, 0));
                e.0 |= bit;
                if active {
                    e.1 |= bit;
                }
            }
        }
    }

    /// Click's `NotifierSignal::unparse`.
    fn text(&self) -> String {
        match self {
            Signal::Idle => "idle".into(),
            Signal::Busy => "busy*".into(),
            Signal::Words(w) => w
                .iter()
                .map(|((name, word), (mask, value))| {
                    let star = if *value != 0 { "*" } else { "" };
                    format!("{name}.{word}/{mask:x}:{value:x}{star}")
                })
                .collect::<Vec<_>>()
                .join("+"),
        }
    }
}

impl Graph {
    /// The signal text Click's `NotifierDebug` prints for element
    /// `index`: the upstream empty signal of its input 0 when that input
    /// is pull, else the downstream full signal of its output 0.
    pub fn notifier_signal_text(&self, index: usize) -> String {
        let numbers = self.notifier_numbers();
        let node = &self.elements[index];
        let signal = match node.ins.first() {
            Some(e) if e.is_some() => self.upstream_signal(*e, &numbers),
            _ => match node.outs.first() {
                Some(e) if e.is_some() => self.downstream_signal(*e, &numbers),
                _ => Signal::Idle,
            },
        };
        signal.text()
    }

    /// Each element's Click notifier signals: (element, name) -> number.
    fn notifier_numbers(&self) -> BTreeMap<(usize, &'static str), usize> {
        let mut next: BTreeMap<&str, usize> = BTreeMap::new();
        let mut numbers = BTreeMap::new();
        let mut take = |i: usize, name: &'static str| {
            let n = next.entry(name).or_insert(0);
            numbers.insert((i, name), *n);
            *n += 1;
        };
        for (i, m) in self.meta.iter().enumerate() {
            if let Some((_, names)) = AT_CONFIGURE.iter().find(|(c, _)| *c == m.class) {
                names.iter().for_each(|name| take(i, name));
            }
        }
        for (i, m) in self.meta.iter().enumerate() {
            if let Some((_, if_pull)) = AT_INITIALIZE.iter().find(|(c, _)| *c == m.class) {
                if !if_pull || self.output_is_pull(i, 0) {
                    take(i, "empty");
                }
            }
        }
        numbers
    }

    /// Element `i`'s class name as written (empty without metadata).
    pub(super) fn class(&self, i: usize) -> &str {
        self.meta.get(i).map_or("", |m| m.class)
    }

    /// Whether some pull input takes output `port` of element `i`.
    fn output_is_pull(&self, i: usize, port: u32) -> bool {
        self.pull_takers(i).any(|e| e.port == port)
    }

    /// The outputs of element `i` that pull inputs are connected to.
    fn pull_takers(&self, i: usize) -> impl Iterator<Item = Edge> + '_ {
        self.elements
            .iter()
            .flat_map(|n| n.ins.iter().copied())
            .filter(move |e| e.is_some() && e.element as usize == i)
    }

    /// Whether a push output leads into some input of element `i`.
    fn has_push_input(&self, i: usize) -> bool {
        self.elements
            .iter()
            .flat_map(|n| n.outs.iter())
            .any(|e| e.is_some() && e.element as usize == i)
    }

    /// Click's `upstream_empty_signal` from the output at `first`: `Idle`
    /// adds nothing; an element with a push input or no input at all
    /// ends the search as `busy*`.
    fn upstream_signal(
        &self,
        first: Edge,
        numbers: &BTreeMap<(usize, &'static str), usize>,
    ) -> Signal {
        self.search(
            first,
            "empty",
            numbers,
            |e, port| e.empty_signal(port).unwrap_or(true),
            |i| {
                let ins = live(&self.elements[i].ins);
                if self.class(i) == "Idle" {
                    Some(Vec::new())
                } else if self.has_push_input(i) || ins.is_empty() {
                    None
                } else {
                    Some(ins)
                }
            },
        )
    }

    /// Click's `downstream_full_signal` from the input at `first`: an
    /// element with a pull output or no output ends it as `busy*`.
    fn downstream_signal(
        &self,
        first: Edge,
        numbers: &BTreeMap<(usize, &'static str), usize>,
    ) -> Signal {
        self.search(
            first,
            "full",
            numbers,
            |e, port| e.push_room(port) != Some(0),
            |i| {
                let outs = live(&self.elements[i].outs);
                (!outs.is_empty() && self.pull_takers(i).next().is_none()).then_some(outs)
            },
        )
    }

    /// The search of Click's `NotifierRouterVisitor` from `first`: a
    /// notifier called `name` adds its signal (active as `active` says
    /// of its element and port) and ends that path; any other element
    /// leads on to the ports `next` gives, or, with `None`, makes the
    /// whole signal `busy*`.
    fn search(
        &self,
        first: Edge,
        name: &'static str,
        numbers: &BTreeMap<(usize, &'static str), usize>,
        active: impl Fn(&dyn crate::Element, usize) -> bool,
        next: impl Fn(usize) -> Option<Vec<Edge>>,
    ) -> Signal {
        let mut signal = Signal::Idle;
        let mut seen = HashSet::new();
        let mut todo = vec![first];
        while let Some(at) = todo.pop() {
            if !seen.insert((at.element, at.port)) {
                continue;
            }
            let i = at.element as usize;
            if let Some(&n) = numbers.get(&(i, name)) {
                // An element busy further up the stack cannot be asked.
                let on = match self.elements[i].cell.try_borrow() {
                    Ok(e) => active(&**e, at.port as usize),
                    Err(_) => true,
                };
                signal.add(name, n, on);
                continue;
            }
            match next(i) {
                Some(more) => todo.extend(more),
                None => return Signal::Busy,
            }
        }
        signal
    }
}

/// The connected ones of a node's edges.
fn live(edges: &[Edge]) -> Vec<Edge> {
    edges.iter().copied().filter(|e| e.is_some()).collect()
}

#[cfg(test)]
mod tests {
    use super::Signal;

    #[test]
    fn signals_print_as_click_unparses_them() {
        let mut s = Signal::Idle;
        assert_eq!(s.text(), "idle");
        s.add("full", 0, true);
        assert_eq!(s.text(), "full.0/1:1*");
        let mut s = Signal::Idle;
        for n in 0..42 {
            s.add("empty", n, n == 0);
        }
        assert_eq!(s.text(), "empty.0/ffffffff:1*+empty.1/3ff:0");
        let mut s = Signal::Idle;
        s.add("empty", 4096 + 33, false);
        assert_eq!(s.text(), "empty2.1/2:0");
        assert_eq!(Signal::Busy.text(), "busy*");
    }
}
