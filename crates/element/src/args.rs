//! Reading an element's arguments the way Click's `Args` does: by keyword,
//! with optional positional forms, stated defaults, and a refusal of
//! anything the element did not ask for.
//!
//! ```text
//! InfiniteSource(\<0800...>, 100, BURST 32)   // DATA and LIMIT positional
//! ```
//!
//! ```text
//! let data: Data = args.read_p("DATA")?.unwrap_or_default();
//! let limit: Option<u64> = args.read_p("LIMIT")?;
//! let burst: usize = args.read("BURST")?.unwrap_or(32);
//! args.complete()?;
//! ```

use bricks_config::{Arg, Span};
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ipv4::Ipv4Cidr;
use std::any::Any;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A problem with an element's arguments, located in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError {
    /// The offending argument, or `None` for the whole argument list.
    pub span: Option<Span>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when there is something useful to say.
    pub help: Option<String>,
}

impl ArgError {
    /// An error about the argument at `span`.
    pub fn at(span: Span, message: impl Into<String>) -> ArgError {
        ArgError {
            span: Some(span),
            message: message.into(),
            help: None,
        }
    }

    /// An error about the argument list as a whole.
    pub fn new(message: impl Into<String>) -> ArgError {
        ArgError {
            span: None,
            message: message.into(),
            help: None,
        }
    }

    /// Adds a hint.
    pub fn with_help(mut self, help: impl Into<String>) -> ArgError {
        self.help = Some(help.into());
        self
    }
}

impl core::fmt::Display for ArgError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgError {}

/// A value an argument can hold.
pub trait FromArg: Sized {
    /// The type in words, for error messages and manuals.
    const TYPE: &'static str;
    /// Parses the argument text (already stripped of its keyword).
    fn from_arg(text: &str) -> Result<Self, String>;
}

/// One argument, its keyword and value as byte ranges of its text: 24
/// bytes, since a route table given inline is a million of them.
#[derive(Clone, Copy)]
struct Item<'a> {
    arg: &'a Arg,
    /// The keyword's range; empty for a positional argument.
    keyword: (u32, u32),
    /// The value's range (the whole trimmed text when positional).
    value: (u32, u32),
}

impl<'a> Item<'a> {
    fn new(arg: &'a Arg) -> Item<'a> {
        let text = arg.text.as_str();
        let b = text.as_bytes();
        if let (Some(&first), Some(&last)) = (b.first(), b.last()) {
            // No space to trim (every space byte is below b'!') and no
            // keyword to split: a route, an address, a number.
            if first > b' ' && last > b' ' && !(first.is_ascii_uppercase() || first == b'_') {
                return Item {
                    arg,
                    keyword: (0, 0),
                    value: (0, b.len() as u32),
                };
            }
        }
        let (mut keyword, mut value) = bricks_config::split_keyword(text);
        // A lone upper-case word is a value, not a keyword with nothing
        // after it: `Print(A)` is labelled "A", as in Click, whose
        // keywords need a value after them.
        if value.is_empty() && keyword.is_some() {
            keyword = None;
            value = text.trim();
        }
        // Both are slices of `text` (the value may be empty at its end).
        let range = |s: &str| {
            let start = s.as_ptr() as usize - text.as_ptr() as usize;
            (start as u32, (start + s.len()) as u32)
        };
        Item {
            arg,
            keyword: keyword.map_or((0, 0), range),
            value: range(value),
        }
    }

    fn text(&self) -> &'a str {
        &self.arg.text
    }

    fn keyword(&self) -> Option<&'a str> {
        let (a, b) = self.keyword;
        (b > a).then(|| &self.arg.text[a as usize..b as usize])
    }

    fn value(&self) -> &'a str {
        &self.arg.text[self.value.0 as usize..self.value.1 as usize]
    }

    fn span(&self) -> Span {
        self.arg.span
    }
}

/// State that every worker's instance of one configured element shares: a
/// route table, an SA database. Made once, by the first instance.
pub type SharedSlot = OnceLock<Arc<dyn Any + Send + Sync>>;

/// The other elements of a configuration, as an element's arguments may
/// name them (Click's element references: ARPQuerier's `TABLE`, a
/// classifier's flow table). The runtime gives one to every element it
/// builds; the element is the one whose arguments are read, so names are
/// resolved relative to its compound.
pub trait ElementRefs {
    /// The element `name` refers to, as Click's `Router::find` resolves
    /// it: `name` inside the asking element's compound, then inside each
    /// enclosing compound in turn, then at top level. Returns its index
    /// (for [`ElementRefs::shared_of`]), full name and class name.
    fn find(&self, name: &str) -> Option<(usize, String, &'static str)>;

    /// The shared state (see [`Args::shared`]) of element `index`, made
    /// now if no instance of it has been made yet. `Err` says why there
    /// is none (its own arguments are wrong, it keeps no shared state, or
    /// the references form a cycle).
    fn shared_of(&self, index: usize) -> Result<Arc<dyn Any + Send + Sync>, String>;

    /// The elements of class `class` whose names are visible from the
    /// asking element as Click's `NameInfo` scopes definitions (an
    /// information element such as IPRewriterPatterns defines names for
    /// its own compound and the compounds inside it): those of the asking
    /// element's compound first, then of each enclosing compound in turn,
    /// in declaration order within each. Returns their indexes (for
    /// [`ElementRefs::shared_of`]). None by default.
    fn in_scope(&self, class: &str) -> Vec<usize> {
        let _ = class;
        Vec::new()
    }

    /// The elements of one of `classes` reached first downstream of the
    /// asking element's output `output`, as Click's flow-based router
    /// context finds them (`Router::visit_downstream` with a class
    /// filter): connections are followed from element to element, every
    /// input of an element leading to every output, and a search stops at
    /// an element of one of the classes. Nearest first. None by default.
    fn downstream(&self, output: usize, classes: &[&str]) -> Vec<usize> {
        let _ = (output, classes);
        Vec::new()
    }

    /// Like [`ElementRefs::downstream`], against the connections, from
    /// input `input` (Click's `Router::visit_upstream`).
    fn upstream(&self, input: usize, classes: &[&str]) -> Vec<usize> {
        let _ = (input, classes);
        Vec::new()
    }

    /// Whether the asking element, a queue (push input, pull output), is
    /// pushed on a worker where none of the tasks pulling from it runs,
    /// so that its packets must cross to another worker's copy (see
    /// [`Args::crosses_workers`]). False by default.
    fn crosses_workers(&self) -> bool {
        false
    }
}

/// A fixed set of named elements' shared state, for unit tests and
/// programmatic graphs: `(name, class, state)`.
#[derive(Default)]
pub struct FixedRefs(pub Vec<(String, &'static str, Arc<dyn Any + Send + Sync>)>);

impl ElementRefs for FixedRefs {
    fn find(&self, name: &str) -> Option<(usize, String, &'static str)> {
        self.0
            .iter()
            .position(|(n, _, _)| n == name)
            .map(|i| (i, self.0[i].0.clone(), self.0[i].1))
    }

    fn shared_of(&self, index: usize) -> Result<Arc<dyn Any + Send + Sync>, String> {
        self.0
            .get(index)
            .map(|(_, _, s)| Arc::clone(s))
            .ok_or_else(|| "no such element".to_string())
    }
}

/// The arguments of one element, read one by one.
pub struct Args<'a> {
    shared: Option<&'a SharedSlot>,
    refs: Option<&'a dyn ElementRefs>,
    items: Vec<Item<'a>>,
    /// The indices of the items with a keyword, in order: keywords are
    /// looked up among these, not among every item (a route table given
    /// inline is a million positional items).
    keyed: Vec<u32>,
    used: Vec<bool>,
    asked: Vec<&'static str>,
    /// Positional items are taken in order; this is the next candidate.
    next_positional: usize,
    whole: Option<Span>,
    /// The default of `MEMREFS` (see [`Args::memrefs`]).
    memrefs: bool,
}

impl<'a> Args<'a> {
    /// Arguments as the configuration parser split them. `whole` locates
    /// the argument list, for errors about a missing argument.
    pub fn new(args: &'a [Arg], whole: Option<Span>) -> Args<'a> {
        let items: Vec<Item<'a>> = args.iter().map(Item::new).collect();
        let keyed = (0..items.len() as u32)
            .filter(|&i| items[i as usize].keyword().is_some())
            .collect();
        Args {
            shared: None,
            refs: None,
            keyed,
            used: vec![false; items.len()],
            items,
            asked: Vec::new(),
            next_positional: 0,
            whole,
            memrefs: false,
        }
    }

    /// Sets the default of the `MEMREFS` keyword for this element: true
    /// when the whole run counts memory references (`bricks run
    /// --memrefs`).
    pub fn with_memrefs_default(mut self, on: bool) -> Args<'a> {
        self.memrefs = on;
        self
    }

    /// Whether the element counts memory references and words touched
    /// per packet (`bricks_qos::memref`): its keyword `MEMREFS true|false`,
    /// or the run's default ([`Args::with_memrefs_default`]; false unless
    /// set). An element that can count reads this once in its `make` and
    /// picks the counting or the non-counting instance of its type.
    pub fn memrefs(&mut self) -> Result<bool, ArgError> {
        Ok(self.read("MEMREFS")?.unwrap_or(self.memrefs))
    }

    /// Gives the element a slot for state shared by all its instances
    /// (see [`Args::shared`]).
    pub fn with_shared(mut self, slot: &'a SharedSlot) -> Args<'a> {
        self.shared = Some(slot);
        self
    }

    /// Lets the element's arguments name other elements of the
    /// configuration (see [`Args::read_shared_of_mp`]).
    pub fn with_refs(mut self, refs: &'a dyn ElementRefs) -> Args<'a> {
        self.refs = Some(refs);
        self
    }

    /// The shared state of another element named by argument `key`
    /// (mandatory, positional or keyword): `TABLE ft` gives the table that
    /// `ft :: FlowTable` made with [`Args::shared`]. The element must be
    /// of class `class`; its state is made first if it is declared later.
    /// A name that is unknown, an element of another class, or one whose
    /// state is of another type is an error located at the argument.
    pub fn read_shared_of_mp<T: Any + Send + Sync>(
        &mut self,
        key: &'static str,
        class: &'static str,
    ) -> Result<Arc<T>, ArgError> {
        self.note(key);
        let i = if let Some(i) = self.find_keyword(key) {
            self.mark_keyword(key);
            i
        } else if let Some(i) = self.take_positional() {
            self.used[i] = true;
            i
        } else {
            return Err(self.missing(key));
        };
        let span = self.items[i].span();
        let name = String::from_arg(self.items[i].value().trim())
            .map_err(|why| ArgError::at(span, format!("bad argument {key}: {why}")))?;
        if name.is_empty() {
            return Err(ArgError::at(
                span,
                format!("bad argument {key}: expected the name of a {class} element"),
            ));
        }
        let Some(refs) = self.refs else {
            return Err(ArgError::at(
                span,
                format!("{key} `{name}`: no other element can be named here"),
            ));
        };
        let Some((index, full, found)) = refs.find(&name) else {
            return Err(
                ArgError::at(span, format!("{key} `{name}` does not name an element")).with_help(
                    format!(
                "name a {class} element of this configuration (inside a compound, relative to it)"
            ),
                ),
            );
        };
        if found != class {
            return Err(ArgError::at(
                span,
                format!("{key} `{full}` is a {found}, not a {class}"),
            ));
        }
        let state = refs
            .shared_of(index)
            .map_err(|why| ArgError::at(span, format!("{key} `{full}`: {why}")))?;
        state.downcast::<T>().map_err(|_| {
            ArgError::at(
                span,
                format!("{key} `{full}` ({class}) keeps state of another type"),
            )
        })
    }

    /// The shared state of the element called `name` (resolved as an
    /// argument naming an element is), which must be of one of `classes`:
    /// for an argument that is a number or an element's name (a
    /// rewriter's MAPPING_CAPACITY). `Err` says why not.
    pub fn shared_of_name<T: Any + Send + Sync>(
        &self,
        name: &str,
        classes: &[&str],
    ) -> Result<Arc<T>, String> {
        let (refs, index, full, found) = self.find_of_classes(name, classes)?;
        refs.shared_of(index)
            .map_err(|why| format!("`{full}`: {why}"))?
            .downcast::<T>()
            .map_err(|_| format!("`{full}` ({found}) keeps state of another type"))
    }

    /// Whether `name` (resolved as an argument naming an element is)
    /// names an element of one of `classes`, whose state is then reached
    /// through its handlers rather than taken. `Err` says why not.
    pub fn names_element_of(&self, name: &str, classes: &[&str]) -> Result<(), String> {
        self.find_of_classes(name, classes).map(drop)
    }

    /// The element `name` names, which must be of one of `classes`: the
    /// references, its index, full name and class.
    fn find_of_classes(
        &self,
        name: &str,
        classes: &[&str],
    ) -> Result<(&'a dyn ElementRefs, usize, String, &'static str), String> {
        let refs = self
            .refs
            .ok_or_else(|| format!("`{name}`: no other element can be named here"))?;
        let (index, full, found) = refs
            .find(name)
            .ok_or_else(|| format!("`{name}` does not name an element"))?;
        if !classes.contains(&found) {
            return Err(format!(
                "`{full}` is a {found}, not one of {}",
                classes.join(", ")
            ));
        }
        Ok((refs, index, full, found))
    }

    /// The shared state of every element of class `class` visible from
    /// this element (see [`ElementRefs::in_scope`]), nearest scope first.
    /// `Err` says why one of them has none.
    pub fn shared_in_scope<T: Any + Send + Sync>(
        &self,
        class: &str,
    ) -> Result<Vec<Arc<T>>, String> {
        let Some(refs) = self.refs else {
            return Ok(Vec::new());
        };
        refs.in_scope(class)
            .into_iter()
            .map(|i| {
                refs.shared_of(i)?
                    .downcast::<T>()
                    .map_err(|_| format!("a {class} keeps state of another type"))
            })
            .collect()
    }

    /// The shared state of the elements of one of `classes` found first
    /// downstream of output `port` (see [`ElementRefs::downstream`]), or,
    /// with `upstream`, upstream of input `port`; nearest first. `Err`
    /// says why one of them has none.
    pub fn shared_by_flow<T: Any + Send + Sync>(
        &self,
        port: usize,
        upstream: bool,
        classes: &[&str],
    ) -> Result<Vec<Arc<T>>, String> {
        let Some(refs) = self.refs else {
            return Ok(Vec::new());
        };
        let found = if upstream {
            refs.upstream(port, classes)
        } else {
            refs.downstream(port, classes)
        };
        found
            .into_iter()
            .map(|i| {
                refs.shared_of(i)?
                    .downcast::<T>()
                    .map_err(|_| "an element keeps state of another type".to_string())
            })
            .collect()
    }

    /// State shared by every worker's instance of this element: `init`
    /// runs for the first instance only (when the configuration is
    /// checked), and later instances get the same `Arc`. Tables that all
    /// workers read (routes, SAs) live here; they must synchronise their
    /// own updates (read-mostly, replaced atomically). Without a slot (a
    /// lone element in a test) every call makes a fresh value.
    pub fn shared<T: Any + Send + Sync>(
        &mut self,
        init: impl FnOnce(&mut Self) -> Result<T, ArgError>,
    ) -> Result<Arc<T>, ArgError> {
        if let Some(existing) = self.shared.and_then(|s| s.get()) {
            return Arc::clone(existing)
                .downcast::<T>()
                .map_err(|_| ArgError::new("shared state of another type"));
        }
        let value = Arc::new(init(self)?);
        if let Some(slot) = self.shared {
            let _ = slot.set(value.clone());
        }
        Ok(value)
    }

    /// Builds arguments from plain strings, for tests and programmatic
    /// graphs.
    pub fn from_strs(args: &'a [Arg]) -> Args<'a> {
        Args::new(args, None)
    }

    fn parse<T: FromArg>(&self, i: usize, key: &str) -> Result<T, ArgError> {
        let it = &self.items[i];
        T::from_arg(it.value().trim()).map_err(|why| {
            ArgError::at(
                it.span(),
                format!("bad argument {key}: expected {}, {why}", T::TYPE),
            )
        })
    }

    /// Whether keyword `key` was given (without reading it): for an
    /// optional argument that [`Args::read_shared_of_mp`] must read only by
    /// keyword, so as not to take a positional one.
    pub fn has_keyword(&self, key: &str) -> bool {
        self.find_keyword(key).is_some()
    }

    fn find_keyword(&self, key: &str) -> Option<usize> {
        // The last occurrence wins, as in Click.
        self.keyed
            .iter()
            .rev()
            .map(|&i| i as usize)
            .find(|&i| self.items[i].keyword() == Some(key))
    }

    /// Whether a positional argument is left for the next
    /// [`Args::read_p`] to take (without taking it).
    pub fn has_positional(&self) -> bool {
        self.items[self.next_positional.min(self.items.len())..]
            .iter()
            .zip(&self.used[self.next_positional.min(self.items.len())..])
            .take_while(|(it, _)| it.keyword().is_none())
            .any(|(_, &used)| !used)
    }

    fn take_positional(&mut self) -> Option<usize> {
        while self.next_positional < self.items.len() {
            let i = self.next_positional;
            self.next_positional += 1;
            if self.items[i].keyword().is_none() && !self.used[i] {
                return Some(i);
            }
            if self.items[i].keyword().is_some() {
                // Positional arguments come before keywords, as in Click.
                self.next_positional = self.items.len();
            }
        }
        None
    }

    fn note(&mut self, key: &'static str) {
        if !self.asked.contains(&key) {
            self.asked.push(key);
        }
    }

    /// An optional keyword-only argument.
    pub fn read<T: FromArg>(&mut self, key: &'static str) -> Result<Option<T>, ArgError> {
        self.note(key);
        match self.find_keyword(key) {
            Some(i) => {
                self.mark_keyword(key);
                self.parse(i, key).map(Some)
            }
            None => Ok(None),
        }
    }

    /// An optional argument that may also be given positionally.
    pub fn read_p<T: FromArg>(&mut self, key: &'static str) -> Result<Option<T>, ArgError> {
        self.note(key);
        if let Some(i) = self.find_keyword(key) {
            self.mark_keyword(key);
            return self.parse(i, key).map(Some);
        }
        match self.take_positional() {
            Some(i) => {
                self.used[i] = true;
                self.parse(i, key).map(Some)
            }
            None => Ok(None),
        }
    }

    /// A mandatory argument that may be given positionally. As in Click
    /// (`Args::find`), when neither its keyword nor a plain positional
    /// argument is there, the next argument is taken whole even if its
    /// first word looks like a keyword: `Message(HELLO THERE)`.
    pub fn read_mp<T: FromArg>(&mut self, key: &'static str) -> Result<T, ArgError> {
        if let Some(v) = self.read_p(key)? {
            return Ok(v);
        }
        let next = (0..self.items.len()).find(|&i| !self.used[i]);
        match next {
            Some(i)
                if self.items[i]
                    .keyword()
                    .is_some_and(|k| !self.asked.contains(&k)) =>
            {
                self.used[i] = true;
                let it = &self.items[i];
                T::from_arg(it.text().trim()).map_err(|why| {
                    ArgError::at(
                        it.span(),
                        format!("bad argument {key}: expected {}, {why}", T::TYPE),
                    )
                })
            }
            _ => Err(self.missing(key)),
        }
    }

    /// A mandatory keyword-only argument.
    pub fn read_m<T: FromArg>(&mut self, key: &'static str) -> Result<T, ArgError> {
        self.read(key)?.ok_or_else(|| self.missing(key))
    }

    /// Every occurrence of a repeatable keyword, in order.
    pub fn read_all<T: FromArg>(&mut self, key: &'static str) -> Result<Vec<T>, ArgError> {
        self.note(key);
        let mut out = Vec::new();
        for k in 0..self.keyed.len() {
            let i = self.keyed[k] as usize;
            if self.items[i].keyword() == Some(key) {
                self.used[i] = true;
                out.push(self.parse(i, key)?);
            }
        }
        Ok(out)
    }

    fn mark_keyword(&mut self, key: &str) {
        for &i in &self.keyed {
            if self.items[i as usize].keyword() == Some(key) {
                self.used[i as usize] = true;
            }
        }
    }

    fn missing(&self, key: &str) -> ArgError {
        let e = ArgError::new(format!("missing mandatory argument {key}"));
        ArgError {
            span: self.whole,
            ..e
        }
    }

    /// Every positional argument not read yet, with its location: the
    /// patterns of a classifier, the routes of a lookup element. Arguments
    /// whose first word looks like a keyword are included whole when they
    /// are not a keyword this element asked for.
    pub fn rest(&mut self) -> Vec<(&'a str, Span)> {
        let mut out = Vec::new();
        self.rest_each(|text, span| out.push((text, span)));
        out
    }

    /// Takes what [`Args::rest`] would give without keeping it: for an
    /// element whose shared state is made already ([`Args::shared_made`]),
    /// so that a later instance does not gather a million inline routes
    /// again only to drop them.
    pub fn skip_rest(&mut self) {
        self.rest_each(|_, _| {});
    }

    /// What [`Args::rest`] gives, one argument at a time, without a list
    /// of them all.
    pub fn rest_each(&mut self, mut each: impl FnMut(&'a str, Span)) {
        for i in 0..self.items.len() {
            if self.used[i] {
                continue;
            }
            let it = self.items[i];
            if let Some(k) = it.keyword() {
                if self.asked.contains(&k) {
                    continue;
                }
            }
            self.used[i] = true;
            each(it.text(), it.span());
        }
    }

    /// Whether this element, a queue, is pushed on a worker where no
    /// task that pulls from it runs (tasks placed with
    /// `StaticThreadSched`): each worker has its own copy of the graph,
    /// so such a queue must keep one store for all of them, as
    /// `ThreadSafeQueue` does, or the packets pushed there are never
    /// pulled. Known when a worker's instance is made; false when the
    /// configuration is checked and with one worker.
    pub fn crosses_workers(&self) -> bool {
        self.refs.is_some_and(|r| r.crosses_workers())
    }

    /// Whether the state shared by this element's instances
    /// ([`Args::shared`]) is made already: this is not the first instance.
    pub fn shared_made(&self) -> bool {
        self.shared.and_then(|s| s.get()).is_some()
    }

    /// Checks that every argument was read; an unknown keyword or an extra
    /// positional argument is an error that names it.
    pub fn complete(self) -> Result<(), ArgError> {
        for (i, it) in self.items.iter().enumerate() {
            if self.used[i] {
                continue;
            }
            if it.value().is_empty() && it.keyword().is_none() {
                // `Class()` and trailing commas give empty arguments.
                continue;
            }
            return Err(match it.keyword() {
                Some(k) => {
                    let e = ArgError::at(it.span(), format!("unknown keyword {k}"));
                    match bricks_config::suggest(k, self.asked.iter().copied()) {
                        Some(s) => e.with_help(format!("did you mean {s}?")),
                        None if self.asked.is_empty() => {
                            e.with_help("this element takes no arguments")
                        }
                        None => e.with_help(format!("keywords: {}", self.asked.join(", "))),
                    }
                }
                None => ArgError::at(it.span(), "too many arguments").with_help(
                    if self.asked.is_empty() {
                        "this element takes no arguments".to_string()
                    } else {
                        format!("arguments: {}", self.asked.join(", "))
                    },
                ),
            });
        }
        Ok(())
    }
}

/// Bytes given as a Click data literal (`\<00 11>`) or a string with
/// escapes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Data(pub Vec<u8>);

impl FromArg for Data {
    const TYPE: &'static str = "data";
    fn from_arg(text: &str) -> Result<Self, String> {
        bricks_config::parse_data(text).map(Data)
    }
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            const TYPE: &'static str = "unsigned integer";
            fn from_arg(text: &str) -> Result<Self, String> {
                let t = text.replace('_', "");
                let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                    <$t>::from_str_radix(h, 16)
                } else {
                    t.parse::<$t>()
                };
                r.map_err(|_| format!("found `{text}`"))
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64, usize);

impl FromArg for i64 {
    const TYPE: &'static str = "integer";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.parse().map_err(|_| format!("found `{text}`"))
    }
}

impl FromArg for f64 {
    const TYPE: &'static str = "real number";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("found `{text}`"))
    }
}

impl FromArg for bool {
    const TYPE: &'static str = "boolean (true/false)";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" | "on" => Ok(true),
            "false" | "no" | "0" | "off" => Ok(false),
            _ => Err(format!("found `{text}`")),
        }
    }
}

impl FromArg for String {
    const TYPE: &'static str = "string";
    fn from_arg(text: &str) -> Result<Self, String> {
        if text.starts_with('"') || text.starts_with('\'') {
            bricks_config::unquote(text)
        } else {
            Ok(text.to_string())
        }
    }
}

impl FromArg for PathBuf {
    const TYPE: &'static str = "file name";
    fn from_arg(text: &str) -> Result<Self, String> {
        let s = String::from_arg(text)?;
        if s.is_empty() {
            return Err("found an empty file name".into());
        }
        Ok(PathBuf::from(s))
    }
}

impl FromArg for Ipv4Addr {
    const TYPE: &'static str = "IPv4 address";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.parse().map_err(|_| format!("found `{text}`"))
    }
}

impl FromArg for Ipv6Addr {
    const TYPE: &'static str = "IPv6 address";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.parse().map_err(|_| format!("found `{text}`"))
    }
}

impl FromArg for EthernetAddress {
    const TYPE: &'static str = "Ethernet address";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.parse().map_err(|_| format!("found `{text}`"))
    }
}

impl FromArg for Ipv4Cidr {
    const TYPE: &'static str = "IPv4 prefix (ADDR/LEN or ADDR/MASK)";
    fn from_arg(text: &str) -> Result<Self, String> {
        if !text.contains('/') {
            // Click's IPPrefixArg accepts a bare address as a /32.
            let a: Ipv4Addr = text.parse().map_err(|_| format!("found `{text}`"))?;
            return Ok(Ipv4Cidr::new(a, 32));
        }
        text.parse().map_err(|_| format!("found `{text}`"))
    }
}

impl FromArg for Duration {
    const TYPE: &'static str = "duration (e.g. 1, 0.5s, 100ms, 20us)";
    fn from_arg(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let v: f64 = num.parse().map_err(|_| format!("found `{text}`"))?;
        let scale = match unit.trim() {
            "" | "s" | "sec" | "secs" => 1.0,
            "ms" | "msec" => 1e-3,
            "us" | "usec" => 1e-6,
            "ns" | "nsec" => 1e-9,
            "min" | "m" => 60.0,
            "h" | "hr" => 3600.0,
            _ => return Err(format!("unknown unit in `{text}`")),
        };
        let secs = v * scale;
        if !secs.is_finite() || !(0.0..=1e12).contains(&secs) {
            return Err(format!("found `{text}`"));
        }
        Ok(Duration::from_secs_f64(secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_upper_case_word_is_a_value() {
        // Click: `Print(A)` is labelled A; `Print(LABEL A)` too.
        let lone = args(&["A"]);
        let mut a = Args::new(&lone, None);
        assert_eq!(a.read_p::<String>("LABEL").unwrap().as_deref(), Some("A"));
        a.complete().unwrap();
        let kw = args(&["LABEL A", "MAXLENGTH 5"]);
        let mut a = Args::new(&kw, None);
        assert_eq!(a.read_p::<String>("LABEL").unwrap().as_deref(), Some("A"));
        assert_eq!(a.read::<u32>("MAXLENGTH").unwrap(), Some(5));
        a.complete().unwrap();
        // A lone word where no positional argument is read is left over.
        let stray = args(&["STOP"]);
        let mut a = Args::new(&stray, None);
        assert_eq!(a.read::<bool>("STOP").unwrap(), None);
        assert!(a.complete().is_err());
    }

    #[test]
    fn a_mandatory_argument_takes_a_keyword_looking_one_whole() {
        // Click's Args::find: `Message(HELLO THERE)` is the message.
        let msg = args(&["HELLO THERE"]);
        let mut a = Args::new(&msg, None);
        assert_eq!(a.read_mp::<String>("MESSAGE").unwrap(), "HELLO THERE");
        a.complete().unwrap();
        // Its own keyword still wins, and an optional one does not take it.
        let kw = args(&["MESSAGE hi", "OTHER x"]);
        let mut a = Args::new(&kw, None);
        assert_eq!(a.read_mp::<String>("MESSAGE").unwrap(), "hi");
        assert!(a.complete().is_err());
        let opt = args(&["HELLO THERE"]);
        let mut a = Args::new(&opt, None);
        assert_eq!(a.read_p::<String>("LABEL").unwrap(), None);
        assert!(a.complete().is_err());
    }

    #[test]
    fn memrefs_keyword_and_default() {
        let off = args(&["MEMREFS false"]);
        let mut a = Args::new(&off, None).with_memrefs_default(true);
        assert!(!a.memrefs().unwrap());
        a.complete().unwrap();
        let on = args(&["MEMREFS true"]);
        assert!(Args::new(&on, None).memrefs().unwrap());
        let none = args(&[]);
        assert!(Args::new(&none, None)
            .with_memrefs_default(true)
            .memrefs()
            .unwrap());
        assert!(!Args::new(&none, None).memrefs().unwrap());
        let bad = args(&["MEMREFS maybe"]);
        assert!(Args::new(&bad, None).memrefs().is_err());
    }

    fn args(texts: &[&str]) -> Vec<Arg> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| Arg {
                text: (*t).into(),
                span: Span {
                    file: 0,
                    start: i * 10,
                    end: i * 10 + t.len(),
                },
            })
            .collect()
    }

    #[test]
    fn positional_then_keyword() {
        let a = args(&["\\<0800>", "100", "BURST 8"]);
        let mut r = Args::new(&a, None);
        let data: Data = r.read_p("DATA").unwrap().unwrap();
        let limit: Option<u64> = r.read_p("LIMIT").unwrap();
        let burst: Option<usize> = r.read("BURST").unwrap();
        let stop: Option<bool> = r.read("STOP").unwrap();
        r.complete().unwrap();
        assert_eq!(data.0, vec![0x08, 0x00]);
        assert_eq!(limit, Some(100));
        assert_eq!(burst, Some(8));
        assert_eq!(stop, None);
    }

    #[test]
    fn keyword_instead_of_positional() {
        let a = args(&["LIMIT 5"]);
        let mut r = Args::new(&a, None);
        let data: Option<Data> = r.read_p("DATA").unwrap();
        let limit: Option<u64> = r.read_p("LIMIT").unwrap();
        r.complete().unwrap();
        assert_eq!(data, None);
        assert_eq!(limit, Some(5));
    }

    #[test]
    fn unknown_keyword_is_named_and_suggested() {
        let a = args(&["LIMT 5"]);
        let mut r = Args::new(&a, None);
        let _: Option<u64> = r.read_p("LIMIT").unwrap();
        let e = r.complete().unwrap_err();
        assert_eq!(e.message, "unknown keyword LIMT");
        assert_eq!(e.help.as_deref(), Some("did you mean LIMIT?"));
        assert_eq!(e.span.unwrap().start, 0);
    }

    #[test]
    fn bad_value_names_argument_and_type() {
        let a = args(&["", "BURST lots"]);
        let mut r = Args::new(&a, None);
        let e = r.read::<usize>("BURST").unwrap_err();
        assert_eq!(
            e.message,
            "bad argument BURST: expected unsigned integer, found `lots`"
        );
        assert_eq!(e.span.unwrap().start, 10);
    }

    #[test]
    fn too_many_positional() {
        let a = args(&["1", "2"]);
        let mut r = Args::new(&a, None);
        let _: Option<u64> = r.read_p("LIMIT").unwrap();
        let e = r.complete().unwrap_err();
        assert_eq!(e.message, "too many arguments");
    }

    #[test]
    fn missing_mandatory() {
        let a = args(&[]);
        let mut r = Args::new(&a, None);
        let e = r.read_mp::<u64>("MTU").unwrap_err();
        assert_eq!(e.message, "missing mandatory argument MTU");
    }

    #[test]
    fn rest_returns_unread_positionals() {
        let a = args(&["12/0806 20/0001", "12/0800", "-"]);
        let mut r = Args::new(&a, None);
        let rest: Vec<&str> = r.rest().into_iter().map(|(t, _)| t).collect();
        assert_eq!(rest, vec!["12/0806 20/0001", "12/0800", "-"]);
        r.complete().unwrap();
    }

    #[test]
    fn shared_state_of_a_named_element() {
        let refs = FixedRefs(vec![
            ("ft".into(), "FlowTable", Arc::new(7u32)),
            ("q".into(), "Queue", Arc::new(1u32)),
        ]);
        let a = args(&["ft"]);
        let mut r = Args::new(&a, None).with_refs(&refs);
        let t: Arc<u32> = r.read_shared_of_mp("TABLE", "FlowTable").unwrap();
        r.complete().unwrap();
        assert_eq!(*t, 7);

        let a = args(&["X 1", "TABLE q"]);
        let mut r = Args::new(&a, None).with_refs(&refs);
        let e = r
            .read_shared_of_mp::<u32>("TABLE", "FlowTable")
            .unwrap_err();
        assert_eq!(e.message, "TABLE `q` is a Queue, not a FlowTable");
        assert_eq!(e.span.unwrap().start, 10);

        let a = args(&["nope"]);
        let mut r = Args::new(&a, None).with_refs(&refs);
        let e = r
            .read_shared_of_mp::<u32>("TABLE", "FlowTable")
            .unwrap_err();
        assert_eq!(e.message, "TABLE `nope` does not name an element");

        let a = args(&["ft"]);
        let mut r = Args::new(&a, None).with_refs(&refs);
        let e = r
            .read_shared_of_mp::<u64>("TABLE", "FlowTable")
            .unwrap_err();
        assert!(e.message.contains("state of another type"), "{}", e.message);

        let a = args(&["ft"]);
        let mut r = Args::new(&a, None);
        assert!(r.read_shared_of_mp::<u32>("TABLE", "FlowTable").is_err());
        let a = args(&[]);
        let mut r = Args::new(&a, None).with_refs(&refs);
        let e = r
            .read_shared_of_mp::<u32>("TABLE", "FlowTable")
            .unwrap_err();
        assert_eq!(e.message, "missing mandatory argument TABLE");
    }

    #[test]
    fn values() {
        assert_eq!(u16::from_arg("0x800"), Ok(0x800));
        assert!(u8::from_arg("256").is_err());
        assert_eq!(bool::from_arg("TRUE"), Ok(true));
        assert_eq!(Duration::from_arg("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(Duration::from_arg("2"), Ok(Duration::from_secs(2)));
        assert!(Duration::from_arg("-1").is_err());
        assert!(Duration::from_arg("5 parsecs").is_err());
        assert_eq!(String::from_arg("\"a b\""), Ok("a b".to_string()));
        let c = Ipv4Cidr::from_arg("10.0.0.1").unwrap();
        assert_eq!(c.prefix_len(), 32);
        assert_eq!(
            Ipv4Cidr::from_arg("10.0.0.0/255.0.0.0")
                .unwrap()
                .prefix_len(),
            8
        );
        assert_eq!(
            EthernetAddress::from_arg("00:11:22:33:44:55").unwrap(),
            EthernetAddress([0, 0x11, 0x22, 0x33, 0x44, 0x55])
        );
    }
}
