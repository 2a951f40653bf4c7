//! `Classifier`: sends each packet to the output of the first pattern of
//! packet bytes it matches (Click's `elements/standard/classifier.cc`).
//!
//! A pattern is a list of `OFFSET/VALUE[%MASK]` clauses, all of which must
//! hold. Compilation merges the clauses of a pattern byte by byte, cuts the
//! constrained bytes into windows of at most eight, and makes each window
//! one masked 64-bit comparison of a [`Program`]; a negated clause becomes a
//! negated group of windows.

use super::click_program::{classifier_program, ClauseBytes, Program as ClickProgram};
use super::program::{self, Base, Expr, Guard, OneTest, Program, Test, ANY_OFFSET};
use super::{check_outputs, locate, read_patterns, PatternError};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, PortInfo, Stats,
};
use std::collections::BTreeMap;

/// The `Classifier` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Classifier",
    ports: "1/-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "classifies packets by their bytes",
    synopsis: "Classifier(PATTERN_1, ..., PATTERN_N)",
    description: "Sends each packet to the output of the first pattern it matches; a \
packet that matches no pattern is dropped and counted. There must be exactly one pattern \
per output: pattern 0 for output 0, and so on.

A pattern is a list of clauses separated by spaces, and matches when every clause does. A \
clause is OFFSET/VALUE or OFFSET/VALUE%MASK. OFFSET is a decimal byte offset from the start \
of the packet data. VALUE is hexadecimal bytes, an even number of hex digits (at least \
two), where `?` matches any nibble. MASK, if given, has exactly as many hex digits as VALUE; \
only the bits it sets are compared, and `?` in it is a zero nibble. A clause written \
!OFFSET/VALUE matches when the plain clause does not. The pattern `-` matches every packet, \
and so does an empty one.

A clause does not match a packet that ends before the last byte it compares (bytes whose \
mask is zero do not count), so its negation does. Patterns are tried in order: put more \
specific ones first. They are compiled once into a decision tree of masked comparisons of \
up to eight bytes each, and a comparison that an earlier one on the same path has already \
decided is skipped: with the example below, an IPv4 frame takes two comparisons.

The `program` read handler prints the decision program Click compiles for these patterns, \
in Click's format (4-byte words `OFFSET/VALUE%MASK`, yes and no branches, `safe length`, \
`alignment offset`); bricks runs its own equivalent program (8-byte words).

Examples: `12/0800` (Ethernet type IPv4); `12/0806 20/0001` (ARP request); `12/86dd` \
(IPv6); `12/0800 23/06` (IPv4 carrying TCP, no VLAN tag); `14/4?` (IP version 4, any \
header length); `0/ffffffffffff` (Ethernet broadcast); `0/01%01` (a multicast \
destination); `!12/0800` (anything but IPv4); `12/0800 47/02%12` (a TCP SYN without ACK \
behind 14 bytes of Ethernet and 20 of IP header); `-` (every packet).",
    ports: "one push input; N push outputs, one per pattern",
    keywords: &[],
    counters: &[("drops", "packets that matched no pattern")],
    example:
        "InfiniteSource(LIMIT 4) -> c :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -); \
c[0] -> Discard; c[1] -> Discard; c[2] -> Discard; c[3] -> Discard;",
    see_also: &["IPClassifier", "CheckIPHeader", "Strip"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let patterns = read_patterns(args);
    check_outputs(CLASS.name, &patterns, ports)?;
    let texts: Vec<&str> = patterns.iter().map(|(t, _)| *t).collect();
    let program = compile(&texts).map_err(|e| locate(e, &patterns))?;
    Ok(Box::new(Classifier {
        one_test: program.one_test(),
        guard: None,
        program,
        patterns: texts.iter().map(|t| t.to_string()).collect(),
        drops: 0,
    }))
}

/// The decision program Click compiles for these patterns
/// (`Classifier::parse_program`), for the `program` handler.
pub fn click_program(patterns: &[&str]) -> Result<ClickProgram, PatternError> {
    let mut parsed = Vec::with_capacity(patterns.len());
    for (i, text) in patterns.iter().enumerate() {
        parsed.push(parse_pattern(text).map_err(|e| PatternError { pattern: i, ..e })?);
    }
    let clauses: Vec<Vec<ClauseBytes<'_>>> = parsed
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|c| ClauseBytes {
                    negated: c.negated,
                    offset: c.offset,
                    bytes: &c.bytes,
                })
                .collect()
        })
        .collect();
    Ok(classifier_program(&clauses))
}

/// Compiles Classifier patterns into a program whose outputs are the
/// pattern numbers.
pub fn compile(patterns: &[&str]) -> Result<Program, PatternError> {
    let mut exprs = Vec::with_capacity(patterns.len());
    for (i, text) in patterns.iter().enumerate() {
        let clauses = parse_pattern(text).map_err(|e| PatternError { pattern: i, ..e })?;
        exprs.push(pattern_expr(&clauses));
    }
    Ok(Program::build(&exprs))
}

/// Classifies `data` by reading `patterns` clause by clause, with no
/// compilation: the reference the compiled program must agree with (the
/// fuzz target and the property test compare the two).
pub fn interpret(patterns: &[&str], data: &[u8]) -> Result<Option<usize>, PatternError> {
    let mut parsed = Vec::with_capacity(patterns.len());
    for (i, text) in patterns.iter().enumerate() {
        parsed.push(parse_pattern(text).map_err(|e| PatternError { pattern: i, ..e })?);
    }
    Ok(parsed
        .iter()
        .position(|clauses| clauses.iter().all(|c| c.matches(data))))
}

/// One `OFFSET/VALUE%MASK` clause as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Clause {
    pub negated: bool,
    pub offset: usize,
    /// `(value & mask, mask)` for each byte from `offset`.
    pub bytes: Vec<(u8, u8)>,
}

impl Clause {
    /// Whether the clause holds: every byte it masks is there and equal.
    fn matches(&self, data: &[u8]) -> bool {
        let all = self.bytes.iter().enumerate().all(|(k, &(v, mask))| {
            mask == 0 || data.get(self.offset + k).is_some_and(|&x| x & mask == v)
        });
        all != self.negated
    }
}

/// Offsets past this cannot be compared (no packet is that long anyway).
const MAX_OFFSET: usize = u16::MAX as usize;

fn is_value_digit(c: u8) -> bool {
    c.is_ascii_hexdigit() || c == b'?'
}

/// A nibble and its mask: `?` is a wildcard.
fn nibble(c: u8) -> (u8, u8) {
    match c {
        b'?' => (0, 0),
        _ => ((c as char).to_digit(16).unwrap_or(0) as u8, 0xf),
    }
}

/// The character at byte `i` of `s`, for messages.
fn char_at(s: &str, i: usize) -> (char, std::ops::Range<usize>) {
    let c = s[i..].chars().next().unwrap_or(' ');
    (c, i..i + c.len_utf8())
}

/// Parses one pattern: its clauses, none for `-` (or an empty pattern).
pub(crate) fn parse_pattern(text: &str) -> Result<Vec<Clause>, PatternError> {
    let s = text.as_bytes();
    let mut out = Vec::new();
    if text.trim() == "-" {
        return Ok(out);
    }
    let mut i = 0;
    loop {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= s.len() {
            return Ok(out);
        }
        let start = i;
        let negated = s[i] == b'!';
        if negated {
            i += 1;
            while i < s.len() && s[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        if i >= s.len() || !s[i].is_ascii_digit() {
            let (found, at) = if i >= s.len() {
                ("the end of the pattern".to_string(), i..i)
            } else {
                let (c, r) = char_at(text, i);
                (format!("`{c}`"), r)
            };
            return Err(PatternError::new(
                at,
                format!("expected a clause OFFSET/VALUE, found {found}"),
            )
            .help("a clause is a decimal offset, `/`, and hex bytes, like `12/0800`; `-` matches every packet"));
        }
        let mut offset = 0usize;
        let off_start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            offset = offset
                .saturating_mul(10)
                .saturating_add((s[i] - b'0') as usize);
            i += 1;
        }
        if offset > MAX_OFFSET {
            return Err(PatternError::new(
                off_start..i,
                format!(
                    "offset {} is too large (at most {MAX_OFFSET})",
                    &text[off_start..i]
                ),
            ));
        }
        if i >= s.len() || s[i] != b'/' {
            let at = if i < s.len() {
                char_at(text, i).1
            } else {
                i..i
            };
            return Err(PatternError::new(at, "expected `/` after the offset")
                .help("a clause is OFFSET/VALUE, like `12/0800`"));
        }
        i += 1;
        let value = i;
        while i < s.len() && is_value_digit(s[i]) {
            i += 1;
        }
        let value = value..i;
        let mut mask = None;
        if i < s.len() && s[i] == b'%' {
            i += 1;
            let m = i;
            while i < s.len() && is_value_digit(s[i]) {
                i += 1;
            }
            mask = Some(m..i);
        }
        if i < s.len() && !s[i].is_ascii_whitespace() {
            let (c, at) = char_at(text, i);
            let what = if mask.is_some() { "mask" } else { "value" };
            return Err(PatternError::new(
                at,
                format!(
                    "`{c}` is not a hex digit in the {what} of `{}`",
                    text[start..i].trim()
                ),
            )
            .help("values and masks are hexadecimal; `?` matches any nibble"));
        }
        let nv = value.len();
        if nv < 2 {
            return Err(PatternError::new(
                start..i,
                format!(
                    "the value of `{}` needs at least 2 hex digits",
                    &text[start..i]
                ),
            ));
        }
        if nv % 2 != 0 {
            return Err(PatternError::new(
                value.clone(),
                format!(
                    "value `{}` has an odd number of hex digits",
                    &text[value.clone()]
                ),
            )
            .help("write whole bytes, two hex digits each, like `0800`"));
        }
        if let Some(m) = &mask {
            if m.len() != nv {
                let how = if m.len() > nv { "many" } else { "few" };
                return Err(PatternError::new(
                    m.clone(),
                    format!(
                        "mask `{}` has too {how} hex digits: {} for a value of {nv}",
                        &text[m.clone()],
                        m.len()
                    ),
                )
                .help("a mask has exactly as many hex digits as its value"));
            }
        }
        if offset + nv / 2 > MAX_OFFSET + 1 {
            return Err(PatternError::new(
                off_start..i,
                format!(
                    "clause `{}` reaches past byte {MAX_OFFSET}",
                    &text[start..i]
                ),
            ));
        }
        let bytes = (0..nv / 2)
            .map(|k| {
                let (vh, mh) = nibble(s[value.start + 2 * k]);
                let (vl, ml) = nibble(s[value.start + 2 * k + 1]);
                let (v, mut m) = (vh << 4 | vl, mh << 4 | ml);
                if let Some(mr) = &mask {
                    let (xh, yh) = nibble(s[mr.start + 2 * k]);
                    let (xl, yl) = nibble(s[mr.start + 2 * k + 1]);
                    m &= (xh << 4 | xl) & (yh << 4 | yl);
                }
                (v & m, m)
            })
            .collect();
        out.push(Clause {
            negated,
            offset,
            bytes,
        });
    }
}

/// Cuts byte constraints (sorted by offset, nonzero masks) into tests of
/// at most eight bytes each.
fn windows(bytes: impl IntoIterator<Item = (usize, (u8, u8))>) -> Vec<Expr> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, u64, u64)> = None;
    for (off, (v, m)) in bytes {
        if m == 0 {
            continue;
        }
        if let Some((start, value, mask)) = &mut cur {
            if off < *start + 8 {
                let shift = (7 - (off - *start)) * 8;
                *value |= (v as u64) << shift;
                *mask |= (m as u64) << shift;
                continue;
            }
            out.push(Expr::Test(Test::eq(
                Base::Data,
                *start as u16,
                *mask,
                *value,
            )));
        }
        cur = Some((off, (v as u64) << 56, (m as u64) << 56));
    }
    if let Some((start, value, mask)) = cur {
        out.push(Expr::Test(Test::eq(Base::Data, start as u16, mask, value)));
    }
    out
}

/// One pattern as an expression: its plain clauses merged byte by byte
/// into windows, then each negated clause.
pub(crate) fn pattern_expr(clauses: &[Clause]) -> Expr {
    let mut known: BTreeMap<usize, (u8, u8)> = BTreeMap::new();
    for c in clauses.iter().filter(|c| !c.negated) {
        for (k, &(v, m)) in c.bytes.iter().enumerate() {
            if m == 0 {
                continue;
            }
            let e = known.entry(c.offset + k).or_insert((0, 0));
            if (e.0 ^ v) & e.1 & m != 0 {
                // Two clauses want different bits here: nothing matches.
                return Expr::Const(false);
            }
            *e = (e.0 | v, e.1 | m);
        }
    }
    let mut parts = windows(known);
    for c in clauses.iter().filter(|c| c.negated) {
        let tests = windows(c.bytes.iter().enumerate().map(|(k, b)| (c.offset + k, *b)));
        parts.push(Expr::Not(Box::new(Expr::And(tests))));
    }
    Expr::And(parts)
}

const HANDLERS: &[Handler] = &[Handler::r("program")];

/// Classifies packets by their bytes.
pub struct Classifier {
    program: Program,
    /// `program` when it is a single test ([`Program::one_test`]), run
    /// without the interpreter.
    one_test: Option<OneTest>,
    /// The [`Guard`] of the path the first packet of a recent batch took.
    guard: Option<Guard>,
    /// The patterns, for the `program` handler, which builds Click's
    /// program only when it is read.
    patterns: Vec<String>,
    drops: u64,
}

impl Classifier {
    /// The push of a program of one test ([`OneTest`]): each packet's
    /// outcome is found in one pass; a batch whose packets all agree (the
    /// usual case) goes whole to that outcome's output, or is dropped,
    /// with no dispatch. A mixed batch is split as any other. Out of line,
    /// so that its loop keeps the test's mask and value in registers (in
    /// line in the push, they were reloaded from the stack for every
    /// packet) and the push of other programs keeps its own allocation.
    #[inline(never)]
    fn push_one_test<const EQ: bool, const AT: u16>(
        &mut self,
        one: OneTest,
        batch: &mut Batch,
        cx: &mut Context<'_>,
    ) {
        let Some((head, rest)) = batch.as_slice().split_first() else {
            return;
        };
        // Compared raw, with a loop for each result: `== outcome` in one
        // loop cost two instructions a packet.
        let raw = one.raw::<EQ, AT>(head);
        let agree = if raw {
            rest.iter().all(|p| one.raw::<EQ, AT>(p))
        } else {
            rest.iter().all(|p| !one.raw::<EQ, AT>(p))
        };
        if agree {
            match one.output(raw != one.flipped()) {
                Some(port) => cx.push(port, batch),
                None => {
                    self.drops += batch.len() as u64;
                    batch.clear();
                }
            }
            return;
        }
        let mut drops = 0u64;
        cx.push_classified(batch, |p| {
            let out = one.output(one.test::<EQ, AT>(p));
            drops += out.is_none() as u64;
            out
        });
        self.drops += drops;
    }

    /// The push of a batch whose first `agree` packets reach leaf `first`
    /// of the program and whose next one does not: split by output, the
    /// `agree` packets not run again ([`Context::push_classified`] asks
    /// for each packet's output once, in order).
    #[inline(never)]
    fn push_mixed(&mut self, batch: &mut Batch, first: u32, agree: usize, cx: &mut Context<'_>) {
        // Counted in a local: a store to the element per packet kept the
        // batch loop's state from staying in registers.
        let mut drops = 0u64;
        let mut at = 0;
        let program = &self.program;
        cx.push_classified(batch, |p| {
            let leaf = if at < agree {
                first
            } else {
                program.classify_leaf(p.data())
            };
            at += 1;
            let out = Program::leaf_output(leaf);
            drops += out.is_none() as u64;
            out
        });
        self.drops += drops;
    }

    /// The push of a batch whose first packet reached leaf `first` by a
    /// path with no guard: the others walk the program too.
    #[inline(never)]
    fn push_walked(&mut self, batch: &mut Batch, first: u32, cx: &mut Context<'_>) {
        let program = &self.program;
        let differs = batch.as_slice()[1..]
            .iter()
            .position(|p| program.classify_leaf(p.data()) != first);
        self.push_agreeing(batch, first, differs, cx);
    }

    /// The push of a batch whose first packet reached leaf `first`, and
    /// whose packet `differs + 1` is the first that may not (`None`: all
    /// reach it).
    #[inline(always)]
    fn push_agreeing(
        &mut self,
        batch: &mut Batch,
        first: u32,
        differs: Option<usize>,
        cx: &mut Context<'_>,
    ) {
        match differs {
            None => match Program::leaf_output(first) {
                Some(port) => cx.push(port, batch),
                None => {
                    self.drops += batch.len() as u64;
                    batch.clear();
                }
            },
            Some(k) => self.push_mixed(batch, first, k + 1, cx),
        }
    }
}

impl Element for Classifier {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if let Some(one) = self.one_test {
            // The Ethernet type's offset, the usual test, as a constant.
            match (one.is_eq(), one.at()) {
                (true, 12) => self.push_one_test::<true, 12>(one, batch, cx),
                (true, _) => self.push_one_test::<true, ANY_OFFSET>(one, batch, cx),
                (false, _) => self.push_one_test::<false, ANY_OFFSET>(one, batch, cx),
            }
            return;
        }
        // As for one test: a batch that agrees goes whole. The packets
        // after the first are checked against the guard of its path, kept
        // from batch to batch while the first packets keep to it.
        let Some((head, rest)) = batch.as_slice().split_first() else {
            return;
        };
        if !self.guard.as_ref().is_some_and(|g| g.holds(head.data())) {
            let (leaf, guard) = self.program.guard(head.data());
            if guard.is_none() {
                return self.push_walked(batch, leaf, cx);
            }
            self.guard = guard;
        }
        // Kept, or made just above. (Taking the reference from a `match`
        // that makes it cost two instructions a packet more.)
        let Some(guard) = &self.guard else {
            return;
        };
        let first = guard.leaf();
        let differs = match guard.one_word() {
            Some((off, mask, value)) => rest
                .iter()
                .position(|p| !program::word_is(p.data(), off, mask, value)),
            None => rest.iter().position(|p| !guard.holds(p.data())),
        };
        self.push_agreeing(batch, first, differs, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        if handler != "program" {
            return None;
        }
        let texts: Vec<&str> = self.patterns.iter().map(String::as_str).collect();
        // The patterns compiled when the element was made.
        Some(click_program(&texts).map_or_else(|e| format!("{e}\n"), |p| p.unparse()))
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};
    use proptest::prelude::*;

    /// ARP request, 192.168.1.1 asking for 192.168.1.2 (42 bytes).
    const ARP_REQUEST: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06, //
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, //
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0xc0, 0xa8, 0x01, 0x01, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x02,
    ];

    /// The ARP reply to it.
    const ARP_REPLY: [u8; 42] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x08, 0x06, //
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, //
        0x00, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xc0, 0xa8, 0x01, 0x02, //
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0xc0, 0xa8, 0x01, 0x01,
    ];

    /// IPv4/TCP SYN 10.0.0.1:40000 -> 10.0.0.2:80 (Ethernet, 54 bytes).
    const TCP_SYN: [u8; 54] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, //
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, //
        0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, //
        0x50, 0x02, 0x72, 0x10, 0x8d, 0x3e, 0x00, 0x00,
    ];

    /// IPv6 frame (ICMPv6 echo request, no payload; 62 bytes).
    const IPV6: [u8; 62] = [
        0x33, 0x33, 0x00, 0x00, 0x00, 0x01, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x86, 0xdd, //
        0x60, 0x00, 0x00, 0x00, 0x00, 0x08, 0x3a, 0x40, //
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, //
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, //
        0x80, 0x00, 0x7f, 0xbd, 0x00, 0x01, 0x00, 0x01,
    ];

    fn run(patterns: &[&str], frame: &[u8]) -> Option<usize> {
        compile(patterns).unwrap().classify(frame)
    }

    fn err(patterns: &[&str]) -> PatternError {
        compile(patterns).unwrap_err()
    }

    const ROUTER: &[&str] = &["12/0806 20/0001", "12/0806 20/0002", "12/0800", "-"];

    #[test]
    fn click_ip_router_patterns() {
        let p = compile(ROUTER).unwrap();
        assert_eq!(p.classify(&ARP_REQUEST), Some(0));
        assert_eq!(p.classify(&ARP_REPLY), Some(1));
        assert_eq!(p.classify(&TCP_SYN), Some(2));
        assert_eq!(p.classify(&IPV6), Some(3));
        assert_eq!(p.classify(&[]), Some(3));
        // IPv4 is decided by two comparisons: 12/0806 fails, the second
        // pattern's 12/0806 is skipped, 12/0800 holds.
        assert_eq!(p.run_counting(&TCP_SYN[..]), (Some(2), 2), "{p}");
        assert_eq!(p.run_counting(&ARP_REQUEST[..]).1, 2);
        assert_eq!(p.run_counting(&ARP_REPLY[..]).1, 3);
    }

    #[test]
    fn element_routes_and_counts_drops() {
        let mut h = Harness::push(&CLASS, "12/0806 20/0001, 12/0806 20/0002, 12/0800", 1, 3);
        let frames: Vec<&[u8]> = vec![&ARP_REQUEST, &TCP_SYN, &IPV6, &ARP_REPLY, &TCP_SYN];
        h.push_packets(
            0,
            frames
                .iter()
                .map(|f| bricks_element::Packet::from_slice(f).unwrap()),
        );
        assert_eq!(h.take_bytes(0), vec![ARP_REQUEST.to_vec()]);
        assert_eq!(h.take_bytes(1), vec![ARP_REPLY.to_vec()]);
        assert_eq!(h.take_bytes(2), vec![TCP_SYN.to_vec(), TCP_SYN.to_vec()]);
        assert_eq!(h.stats().get("drops"), Some(1));
    }

    #[test]
    fn value_lengths_and_offsets() {
        assert_eq!(run(&["12/08"], &TCP_SYN), Some(0));
        assert_eq!(run(&["12/080045"], &TCP_SYN), Some(0));
        // Source and destination IP in one clause of 8 bytes, then 10.
        assert_eq!(run(&["26/0a0000010a000002"], &TCP_SYN), Some(0));
        assert_eq!(run(&["24/149a0a0000010a000002"], &TCP_SYN), Some(0));
        assert_eq!(run(&["24/149a0a0000010a000003"], &TCP_SYN), None);
        assert_eq!(run(&["0/001122334455"], &TCP_SYN), Some(0));
        assert_eq!(run(&["0/ffffffffffff"], &ARP_REQUEST), Some(0));
        assert_eq!(run(&["0/ffffffffffff"], &ARP_REPLY), None);
        assert_eq!(run(&["12/86DD"], &IPV6), Some(0), "upper-case hex");
    }

    #[test]
    fn masks() {
        // Multicast bit of the destination address.
        assert_eq!(run(&["0/01%01"], &IPV6), Some(0));
        assert_eq!(run(&["0/01%01"], &TCP_SYN), None);
        // TCP flags of the SYN: SYN set, ACK clear.
        assert_eq!(run(&["47/02%12"], &TCP_SYN), Some(0));
        assert_eq!(run(&["47/12%12"], &TCP_SYN), None);
        // Value bits outside the mask are ignored.
        assert_eq!(run(&["12/ffff%0000 14/45"], &TCP_SYN), Some(0));
        assert_eq!(run(&["14/4f%f0"], &TCP_SYN), Some(0));
        // `?` in a mask is a zero nibble.
        assert_eq!(run(&["14/4f%f?"], &TCP_SYN), Some(0));
    }

    #[test]
    fn wildcards() {
        assert_eq!(run(&["14/4?"], &TCP_SYN), Some(0));
        assert_eq!(run(&["14/?5"], &TCP_SYN), Some(0));
        assert_eq!(run(&["14/?6"], &TCP_SYN), None);
        assert_eq!(run(&["12/08?? 23/06"], &TCP_SYN), Some(0));
        assert_eq!(
            run(&["12/????"], &[]),
            Some(0),
            "all-wildcard clause needs no bytes"
        );
    }

    #[test]
    fn negation() {
        assert_eq!(run(&["!12/0800", "-"], &TCP_SYN), Some(1));
        assert_eq!(run(&["!12/0800", "-"], &IPV6), Some(0));
        assert_eq!(
            run(&["12/0800 !23/11"], &TCP_SYN),
            Some(0),
            "IPv4 but not UDP"
        );
        assert_eq!(run(&["12/0800 ! 23/06"], &TCP_SYN), None, "space after !");
        // A negated clause of more than eight bytes.
        assert_eq!(run(&["!26/0a0000010a000002ffff"], &TCP_SYN), Some(0));
        assert_eq!(run(&["!26/0a0000010a0000029c40"], &TCP_SYN), None);
        // A negated all-wildcard clause never matches.
        assert_eq!(run(&["!12/??"], &TCP_SYN), None);
    }

    #[test]
    fn first_match_wins() {
        assert_eq!(run(&["-", "12/0800"], &TCP_SYN), Some(0));
        assert_eq!(run(&["12/0800", "12/0800 23/06"], &TCP_SYN), Some(0));
        assert_eq!(run(&["12/0800 23/06", "12/0800"], &TCP_SYN), Some(0));
        assert_eq!(run(&["12/0800 23/11", "12/0800"], &TCP_SYN), Some(1));
        // Contradictory clauses match nothing; later patterns still work.
        assert_eq!(run(&["12/08 12/06", "-"], &TCP_SYN), Some(1));
        assert_eq!(run(&["", "12/0800"], &TCP_SYN), Some(0), "empty pattern");
    }

    #[test]
    fn short_packets_do_not_match() {
        let short = &TCP_SYN[..13];
        assert_eq!(run(&["12/0800", "-"], short), Some(1));
        assert_eq!(run(&["12/08", "-"], short), Some(0));
        // Bytes the mask ignores need not be there.
        assert_eq!(run(&["12/08??", "-"], short), Some(0));
        assert_eq!(run(&["12/0800%ff00", "-"], short), Some(0));
        // The negation of a clause the packet is too short for holds.
        assert_eq!(run(&["!12/0800", "-"], short), Some(0));
        assert_eq!(run(&["100/00", "-"], &TCP_SYN), Some(1));
        assert_eq!(run(&["53/00", "54/00", "-"], &TCP_SYN), Some(0));
        assert_eq!(run(&["54/00", "-"], &TCP_SYN), Some(1));
    }

    #[test]
    fn truncated_frame() {
        // An ARP request cut after the opcode's first byte.
        let cut = &ARP_REQUEST[..21];
        assert_eq!(run(ROUTER, cut), Some(3));
    }

    #[test]
    fn parse_errors() {
        let e = err(&["12/0800", "12/080"]);
        assert_eq!(e.pattern, 1);
        assert_eq!(e.message, "value `080` has an odd number of hex digits");
        assert_eq!(e.at, 3..6);
        assert_eq!(
            e.to_string(),
            "pattern 1: value `080` has an odd number of hex digits"
        );
        let e = err(&["12/0"]);
        assert_eq!(e.message, "the value of `12/0` needs at least 2 hex digits");
        let e = err(&["12/0800%ff"]);
        assert_eq!(
            e.message,
            "mask `ff` has too few hex digits: 2 for a value of 4"
        );
        assert_eq!(e.at, 8..10);
        let e = err(&["12/08%ffff"]);
        assert!(e.message.contains("too many"), "{e}");
        let e = err(&["12/08x0"]);
        assert_eq!(e.message, "`x` is not a hex digit in the value of `12/08`");
        assert_eq!(e.at, 5..6);
        let e = err(&["x/08"]);
        assert_eq!(e.message, "expected a clause OFFSET/VALUE, found `x`");
        let e = err(&["12 0800"]);
        assert_eq!(e.message, "expected `/` after the offset");
        assert_eq!(e.at, 2..3);
        let e = err(&["12/0800 !"]);
        assert_eq!(
            e.message,
            "expected a clause OFFSET/VALUE, found the end of the pattern"
        );
        let e = err(&["99999999999999999999/00"]);
        assert!(
            e.message
                .starts_with("offset 99999999999999999999 is too large"),
            "{e}"
        );
        let e = err(&["65535/0000"]);
        assert!(e.message.contains("reaches past"), "{e}");
        let e = err(&["12/08é"]);
        assert_eq!(e.at, 5..7, "a whole character");
        let e = err(&["- 12/0800"]);
        assert_eq!(e.message, "expected a clause OFFSET/VALUE, found `-`");
    }

    #[test]
    fn program_handler_prints_clicks_program() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        };
        let e = make_element(&CLASS, "1/01, -", &ports).unwrap();
        assert_eq!(
            e.read_handler("program").unwrap(),
            " 0   0/00010000%00ff0000  yes->[0]  no->[1]\nsafe length 2\nalignment offset 0\n"
        );
        assert!(e.handlers().iter().any(|h| h.name == "program" && h.read));
        assert_eq!(e.read_handler("nonesuch"), None);
    }

    #[test]
    fn outputs_must_match_patterns() {
        let ports = |n| PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; n],
        };
        let e = make_element(&CLASS, "12/0800, -", &ports(1)).err().unwrap();
        assert_eq!(
            e,
            "Classifier has 2 patterns but 1 output: pattern 1 has no output"
        );
        let e = make_element(&CLASS, "12/0800", &ports(3)).err().unwrap();
        assert_eq!(e, "Classifier has 1 pattern but 3 outputs");
        assert!(make_element(&CLASS, "12/0800, -", &ports(2)).is_ok());
        assert!(
            make_element(&CLASS, "12/0800, -,", &ports(2)).is_ok(),
            "trailing comma"
        );
        assert!(make_element(&CLASS, "", &ports(0)).is_ok());
    }

    #[test]
    fn errors_point_at_the_token() {
        let parsed = bricks_runtime::testing::parse_args("12/0800, 12/08zz").unwrap();
        let mut a = Args::new(&parsed, None);
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        };
        let e = make(&mut a, &ports).err().unwrap();
        let span = e.span.unwrap();
        let arg = parsed[1].span;
        assert_eq!((span.start - arg.start, span.end - arg.start), (5, 6));
        assert_eq!(
            e.message,
            "pattern 1: `z` is not a hex digit in the value of `12/08`"
        );
    }

    #[test]
    fn manual_pattern_examples_work() {
        let d = MANUAL.description;
        let ex = &d[d.find("Examples:").unwrap()..];
        let pats: Vec<String> = ex
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(pats.len(), 10, "{pats:?}");
        let refs: Vec<&str> = pats.iter().map(String::as_str).collect();
        let p = compile(&refs).unwrap();
        assert_eq!(p.classify(&TCP_SYN), Some(0));
        assert_eq!(p.classify(&ARP_REQUEST), Some(1));
        assert_eq!(p.classify(&IPV6), Some(2));
        assert_eq!(run(&[refs[8]], &TCP_SYN), Some(0), "the SYN pattern");
        assert_eq!(run(&[refs[5]], &ARP_REQUEST), Some(0), "broadcast");
        assert_eq!(run(&[refs[6]], &IPV6), Some(0), "multicast");
    }

    #[test]
    fn manual_example_builds() {
        let ex = MANUAL.example;
        assert!(ex.contains("Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -)"));
        let start = ex.find("Classifier(").unwrap() + "Classifier(".len();
        let end = ex[start..].find(')').unwrap() + start;
        let mut h = Harness::push(&CLASS, &ex[start..end], 1, 4);
        h.push_bytes(0, &IPV6);
        assert_eq!(h.take(3).len(), 1);
    }

    fn hex_digit() -> impl Strategy<Value = char> {
        prop_oneof![
            8 => prop::sample::select("0123456789abcdefABCDEF".chars().collect::<Vec<_>>()),
            1 => Just('?'),
        ]
    }

    fn clause() -> impl Strategy<Value = String> {
        (any::<bool>(), 0usize..24, 1usize..11, any::<bool>())
            .prop_flat_map(|(neg, off, nbytes, with_mask)| {
                let digits = prop::collection::vec(hex_digit(), nbytes * 2);
                let mask = prop::collection::vec(hex_digit(), nbytes * 2);
                (Just((neg, off, with_mask)), digits, mask)
            })
            .prop_map(|((neg, off, with_mask), v, m)| {
                let v: String = v.into_iter().collect();
                let m: String = m.into_iter().collect();
                let bang = if neg { "!" } else { "" };
                if with_mask {
                    format!("{bang}{off}/{v}%{m}")
                } else {
                    format!("{bang}{off}/{v}")
                }
            })
    }

    fn pattern() -> impl Strategy<Value = String> {
        prop_oneof![
            1 => Just("-".to_string()),
            8 => prop::collection::vec(clause(), 0..4).prop_map(|c| c.join(" ")),
        ]
    }

    /// A packet made of random bytes with, sometimes, a pattern's values
    /// written in, so that matches are common.
    fn packet(patterns: &[Vec<Clause>], seed: &[u8], pick: usize, len: usize) -> Vec<u8> {
        let mut p: Vec<u8> = seed.iter().copied().cycle().take(len).collect();
        if let Some(clauses) = patterns.get(pick % (patterns.len() + 1)) {
            for c in clauses.iter().filter(|c| !c.negated) {
                for (k, &(v, m)) in c.bytes.iter().enumerate() {
                    if let Some(x) = p.get_mut(c.offset + k) {
                        *x = (*x & !m) | v;
                    }
                }
            }
        }
        p
    }

    /// The batch split behind every classifying element: each output gets
    /// exactly the packets classified to it, in their order, whatever the
    /// batch's size and mix; unmatched packets are dropped. Outputs: 5
    /// (split output by output) and 20 (chained, past 16 outputs);
    /// batches of 1 to 300 packets (more than one batch past 256).
    fn split_keeps_each_outputs_packets_in_order(outputs: usize, firsts: &[u8]) {
        let patterns: Vec<String> = (0..outputs).map(|o| format!("0/{o:02x}")).collect();
        let mut h = Harness::push(&CLASS, &patterns.join(", "), 1, outputs);
        let packets = firsts.iter().enumerate().map(|(i, &b)| {
            bricks_element::Packet::from_slice(&[b, (i >> 8) as u8, i as u8]).unwrap()
        });
        h.push_packets(0, packets);
        for o in 0..outputs {
            let want: Vec<Vec<u8>> = firsts
                .iter()
                .enumerate()
                .filter(|&(_, &b)| usize::from(b) == o)
                .map(|(i, &b)| vec![b, (i >> 8) as u8, i as u8])
                .collect();
            assert_eq!(h.take_bytes(o), want, "output {o} of {outputs}");
        }
        let dropped = firsts
            .iter()
            .filter(|&&b| usize::from(b) >= outputs)
            .count();
        assert_eq!(h.stats().get("drops"), Some(dropped as u64));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn batches_split_by_output_in_order(
            few in prop::collection::vec(0u8..7, 1..300),
            many in prop::collection::vec(0u8..24, 1..300),
        ) {
            split_keeps_each_outputs_packets_in_order(5, &few);
            split_keeps_each_outputs_packets_in_order(20, &many);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn compiled_matches_naive(
            texts in prop::collection::vec(pattern(), 1..6),
            seed in prop::collection::vec(any::<u8>(), 1..16),
            picks in prop::collection::vec((any::<usize>(), 0usize..48), 8),
        ) {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let program = compile(&refs).unwrap();
            let parsed: Vec<Vec<Clause>> = refs.iter().map(|t| parse_pattern(t).unwrap()).collect();
            for (pick, len) in picks {
                let p = packet(&parsed, &seed, pick, len);
                let want = interpret(&refs, &p).unwrap();
                prop_assert_eq!(program.classify(&p), want, "{:?} on {:02x?}\n{}", texts, p, program);
            }
        }

        /// The element agrees with the naive reading of the patterns
        /// packet by packet, in order on each output, over batches of
        /// every size whose packets mostly take the same few paths (so
        /// that guards are kept, broken and made again).
        #[test]
        fn element_batches_match_naive(
            texts in prop::collection::vec(pattern(), 2..6),
            frames in prop::collection::vec((0usize..3, any::<u8>(), 0usize..40), 1..200),
            sizes in prop::collection::vec(1usize..40, 1..12),
        ) {
            // An empty pattern is no argument in a configuration: `-`
            // says the same.
            let refs: Vec<&str> =
                texts.iter().map(|t| if t.is_empty() { "-" } else { t.as_str() }).collect();
            let parsed: Vec<Vec<Clause>> = refs.iter().map(|t| parse_pattern(t).unwrap()).collect();
            let outputs = refs.len();
            let mut h = Harness::push(&CLASS, &refs.join(", "), 1, outputs);
            let frames: Vec<Vec<u8>> = frames
                .iter()
                .map(|&(pick, seed, len)| packet(&parsed, &[seed, seed ^ 0x5a, 7], pick, len))
                .collect();
            let mut want = vec![Vec::new(); outputs];
            let mut dropped = 0u64;
            for f in &frames {
                match interpret(&refs, f).unwrap() {
                    Some(o) => want[o].push(f.clone()),
                    None => dropped += 1,
                }
            }
            let mut rest = &frames[..];
            for &n in sizes.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (now, later) = rest.split_at(n.min(rest.len()));
                h.push_packets(0, now.iter().map(|f| bricks_element::Packet::from_slice(f).unwrap()));
                rest = later;
            }
            for (o, w) in want.iter().enumerate() {
                prop_assert_eq!(&h.take_bytes(o), w, "output {} of {:?}", o, texts);
            }
            prop_assert_eq!(h.stats().get("drops"), Some(dropped));
        }

        /// Programs of one test run without the interpreter agree with it
        /// and with the naive reading of the patterns, on packets that end
        /// before, inside and after the bytes the test reads.
        #[test]
        fn one_test_matches_the_interpreter(
            offset in 0usize..24,
            value in prop::collection::vec(any::<u8>(), 1..9),
            mask in prop::option::of(prop::collection::vec(any::<u8>(), 9)),
            negate in any::<bool>(),
            rest in prop::sample::select(vec!["", ", -", ", 0/00%00", ", -, -"]),
            first in prop::sample::select(vec!["", "-, "]),
            packets in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..24),
        ) {
            let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
            let mask = mask.map(|m| format!("%{}", hex(&m[..value.len()]))).unwrap_or_default();
            let not = if negate { "!" } else { "" };
            let text = format!("{first}{not}{offset}/{}{mask}{rest}", hex(&value));
            let refs: Vec<&str> = text.split(", ").collect();
            let program = compile(&refs).unwrap();
            let Some(one) = program.one_test() else {
                // Nothing to compare: the pattern compiled to no test or
                // to several.
                return Ok(());
            };
            prop_assert!(program.len() == 1, "{}: {}", text, program);
            for mut p in packets {
                // Half the packets hold the value where the test looks.
                if p.len() > offset && p[0] & 1 == 0 {
                    let n = value.len().min(p.len() - offset);
                    p[offset..offset + n].copy_from_slice(&value[..n]);
                }
                let want = interpret(&refs, &p).unwrap();
                prop_assert_eq!(program.classify(&p), want, "{} on {:02x?}", text, p);
                prop_assert_eq!(one.classify(&p), want, "{} on {:02x?}\n{}", text, p, program);
                // The test the element's batch loop runs: without the byte
                // swap for an equality.
                let pk = bricks_element::Packet::from_slice(&p).unwrap();
                let outcome = if one.is_eq() { one.test::<true, ANY_OFFSET>(&pk) } else { one.test::<false, ANY_OFFSET>(&pk) };
                prop_assert_eq!(one.output(outcome), want, "{} on {:02x?}\n{}", text, p, program);
                // The raw result a batch of one outcome is checked by.
                let raw = if one.is_eq() { one.raw::<true, ANY_OFFSET>(&pk) } else { one.raw::<false, ANY_OFFSET>(&pk) };
                prop_assert_eq!(raw != one.flipped(), outcome, "{} on {:02x?}", text, p);
                prop_assert_eq!(one.raw::<false, ANY_OFFSET>(&pk) != one.flipped(), outcome, "{} on {:02x?}", text, p);
            }
        }
    }

    /// Packets of `frames`, each tagged with its position in byte 40 so
    /// that order can be checked.
    fn numbered(frames: &[&[u8]]) -> Vec<bricks_element::Packet> {
        frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut f = f.to_vec();
                f.resize(f.len().max(42), 0);
                f[40] = i as u8;
                bricks_element::Packet::from_slice(&f).unwrap()
            })
            .collect()
    }

    /// The positions (byte 40) of the packets output `port` got, in order.
    fn order(h: &mut Harness, port: usize) -> Vec<u8> {
        h.take_bytes(port).iter().map(|f| f[40]).collect()
    }

    #[test]
    fn one_test_batches_agreeing_mixed_and_dropped() {
        let mut ip = ARP_REQUEST.to_vec();
        ip[12..14].copy_from_slice(&[0x08, 0x00]);
        let (ip, arp): (&[u8], &[u8]) = (&ip, &ARP_REQUEST);
        let mut h = Harness::push(&CLASS, "12/0800, -", 1, 2);
        // Every packet one way: the batch goes whole, in order.
        h.push_packets(0, numbered(&[ip, ip, ip]));
        assert_eq!(order(&mut h, 0), [0, 1, 2]);
        assert!(order(&mut h, 1).is_empty());
        h.push_packets(0, numbered(&[arp, arp]));
        assert!(order(&mut h, 0).is_empty());
        assert_eq!(order(&mut h, 1), [0, 1]);
        // Mixed: each output keeps its packets' order.
        h.push_packets(0, numbered(&[arp, ip, ip, arp, ip, arp]));
        assert_eq!(order(&mut h, 0), [1, 2, 4]);
        assert_eq!(order(&mut h, 1), [0, 3, 5]);
        assert_eq!(h.stats().get("drops"), Some(0));
        // A negated test sends the same packets the other way.
        let mut h = Harness::push(&CLASS, "!12/0800, -", 1, 2);
        h.push_packets(0, numbered(&[arp, ip, arp]));
        assert_eq!(order(&mut h, 0), [0, 2]);
        assert_eq!(order(&mut h, 1), [1]);
        // And its batches of one outcome go whole, either way.
        h.push_packets(0, numbered(&[ip, ip, ip, ip, ip]));
        assert!(order(&mut h, 0).is_empty());
        assert_eq!(order(&mut h, 1), [0, 1, 2, 3, 4]);
        h.push_packets(0, numbered(&[arp, arp, arp]));
        assert_eq!(order(&mut h, 0), [0, 1, 2]);
        assert!(order(&mut h, 1).is_empty());
        h.push_packets(0, numbered(&[ip, ip, ip, arp]));
        assert_eq!(order(&mut h, 0), [3]);
        assert_eq!(order(&mut h, 1), [0, 1, 2]);

        // Without a pattern for the rest, those are dropped and counted.
        let mut h = Harness::push(&CLASS, "12/0800", 1, 1);
        h.push_packets(0, numbered(&[arp, arp, arp]));
        assert!(order(&mut h, 0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(3));
        h.push_packets(0, numbered(&[ip, arp, ip, arp]));
        assert_eq!(order(&mut h, 0), [0, 2]);
        assert_eq!(h.stats().get("drops"), Some(5));
        h.push_packets(0, numbered(&[ip, ip]));
        assert_eq!(order(&mut h, 0), [0, 1]);
        assert_eq!(h.stats().get("drops"), Some(5));
        // A frame too short for an eight-byte load is tested on the bytes
        // it has: 14 bytes hold the type, 13 do not.
        let frames = [&ip[..14], &ip[..13], &arp[..14]];
        let packets = frames
            .iter()
            .map(|f| bricks_element::Packet::from_slice(f).unwrap());
        h.push_packets(0, packets);
        assert_eq!(h.take_bytes(0), vec![ip[..14].to_vec()]);
        assert_eq!(h.stats().get("drops"), Some(7));
    }

    #[test]
    fn a_program_batch_agreeing_mixed_and_dropped() {
        let (ip, arp, reply, v6): (&[u8], &[u8], &[u8], &[u8]) =
            (&TCP_SYN, &ARP_REQUEST, &ARP_REPLY, &IPV6);
        let mut h = Harness::push(&CLASS, "12/0806 20/0001, 12/0806 20/0002, 12/0800", 1, 3);
        h.push_packets(0, numbered(&[ip, ip, ip, ip]));
        assert_eq!(order(&mut h, 2), [0, 1, 2, 3]);
        h.push_packets(0, numbered(&[v6, v6, v6]));
        assert_eq!(h.stats().get("drops"), Some(3));
        // Agreeing first packets, then every way and a drop.
        h.push_packets(0, numbered(&[ip, ip, ip, arp, v6, ip, reply, arp]));
        assert_eq!(order(&mut h, 0), [3, 7]);
        assert_eq!(order(&mut h, 1), [6]);
        assert_eq!(order(&mut h, 2), [0, 1, 2, 5]);
        assert_eq!(h.stats().get("drops"), Some(4));
        // A dropped first packet.
        h.push_packets(0, numbered(&[v6, v6, reply, v6]));
        assert_eq!(order(&mut h, 1), [2]);
        assert!(order(&mut h, 0).is_empty() && order(&mut h, 2).is_empty());
        assert_eq!(h.stats().get("drops"), Some(7));
    }

    #[test]
    fn the_usual_ethertype_split_is_one_test() {
        let program = compile(&["12/0800", "-"]).unwrap();
        let one = program.one_test().expect("one test");
        let mut ip = ARP_REQUEST.to_vec();
        ip[12..14].copy_from_slice(&[0x08, 0x00]);
        assert_eq!(one.classify(&ip), Some(0));
        assert_eq!(one.classify(&ARP_REQUEST), Some(1));
        assert_eq!(one.classify(&ARP_REQUEST[..13]), Some(1));
        assert_eq!(one.classify(&[]), Some(1));
        let drop_rest = compile(&["12/0806"]).unwrap().one_test().expect("one test");
        assert_eq!(drop_rest.classify(&ARP_REQUEST), Some(0));
        assert_eq!(drop_rest.classify(&ip), None);
        assert!(compile(&["12/0806 20/0001", "-"])
            .unwrap()
            .one_test()
            .is_none());
        assert!(compile(&["-"]).unwrap().one_test().is_none());
    }
}
