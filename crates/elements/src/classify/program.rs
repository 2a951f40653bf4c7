//! Compiled classifier programs: a decision DAG of masked comparisons.
//!
//! Classifier and IPClassifier compile their patterns once, at
//! configuration time, into the structure Click's
//! `Classification::Wordwise::Program` uses (`elements/standard/
//! classification.cc`): a DAG whose inner nodes load a big-endian word at a
//! fixed offset, mask it, compare it, and jump on the outcome, and whose
//! leaves are output ports. A packet costs one load, mask, compare and
//! branch per node it visits, with no allocation and no call per node.
//!
//! Patterns are first written as boolean [`Expr`]essions over [`Test`]s;
//! [`Program::build`] turns the list of patterns into short-circuit control
//! flow (an `and` jumps to the next conjunct on success and to the next
//! pattern on failure), shares identical nodes, and then runs Click's
//! "dominator" optimisation in a simple form: along every edge it knows the
//! outcome of a few tests that every path to the edge made, and an edge into
//! a test whose outcome that knowledge decides is moved past it. With
//! `Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -)` an IPv4 frame
//! takes two tests: `12/0806` fails, the second pattern's `12/0806` is
//! skipped, `12/0800` succeeds.
//!
//! A test reads up to eight bytes. When the packet ends before the last byte
//! the mask selects, the test is false (Click's "short packet" rule); a
//! test's `negate` flag gives "present and not equal", which is still false
//! on a short packet, while an [`Expr::Not`] is a plain logical negation.

use bricks_packet::Packet;
use std::collections::HashMap;
use std::fmt;

/// Where a test reads its bytes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Base {
    /// The packet data (Classifier).
    Data,
    /// The Ethernet header in front of the IP header (IPFilter's `ether`
    /// primitives): its 14 bytes, or none (see [`IpHeaders::with_link`]).
    Link,
    /// The IP header (IPClassifier).
    Network,
    /// The transport header: the IP header plus its header length; in
    /// IPv6, the upper-layer header behind the extension headers.
    Transport,
    /// IPv6 only: what the walk of the extension header chain found, two
    /// bytes and six of padding (see [`IpHeaders`]): the upper-layer protocol, then flags
    /// ([`UPPER_FRAGMENT`], [`UPPER_LATER_FRAGMENT`]). Empty when the chain
    /// cannot be walked.
    Upper,
}

/// [`Base::Upper`]'s flags: the chain holds a Fragment header.
pub const UPPER_FRAGMENT: u8 = 0x80;
/// [`Base::Upper`]'s flags: a fragment other than the first, which has no
/// upper-layer header.
pub const UPPER_LATER_FRAGMENT: u8 = 0x40;

/// The comparison a test makes between the masked word `x` and its
/// operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `x == a`.
    Eq,
    /// `x > a`.
    Gt,
    /// `a <= x <= b`.
    In,
}

/// One comparison of up to eight packet bytes.
///
/// The word is the eight bytes from `offset` as a big-endian `u64` (bytes
/// past the end of the packet read as zero); `mask`, `a` and `b` are in the
/// same left-aligned position, so a field in the middle of the word compares
/// in numeric order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Test {
    /// Which header `offset` counts from.
    pub base: Base,
    /// Byte offset of the word.
    pub offset: u16,
    /// Bytes from `offset` the packet must hold: through the last byte the
    /// mask selects.
    pub need: u8,
    /// The comparison.
    pub op: Op,
    /// Present-and-not: the test is true when the bytes are there and the
    /// comparison fails.
    pub negate: bool,
    /// Bits of the word that take part.
    pub mask: u64,
    /// First operand (already masked for [`Op::Eq`]).
    pub a: u64,
    /// Second operand ([`Op::In`] only).
    pub b: u64,
}

/// Bytes a mask needs: through its last nonzero byte.
fn need_of(mask: u64) -> u8 {
    if mask == 0 {
        0
    } else {
        8 - (mask.trailing_zeros() / 8) as u8
    }
}

impl Test {
    /// `word & mask == value & mask` at `offset`.
    pub fn eq(base: Base, offset: u16, mask: u64, value: u64) -> Test {
        Test {
            base,
            offset,
            need: need_of(mask),
            op: Op::Eq,
            negate: false,
            mask,
            a: value & mask,
            b: 0,
        }
    }

    /// A comparison of the `bits`-bit field that starts `bit` bits into
    /// `base` (`bits <= 32`): `field & mask` against `a` (and `b`), all in
    /// field units. The caller keeps `a` and `b` below `2^bits`.
    pub fn field(base: Base, bit: usize, bits: u32, mask: u64, op: Op, a: u64, b: u64) -> Test {
        debug_assert!((1..=32).contains(&bits));
        let offset = bit / 8;
        let shift = 64 - (bit % 8) as u32 - bits;
        let mask = (mask & ((1u64 << bits) - 1)) << shift;
        let a = a << shift;
        Test {
            base,
            offset: offset as u16,
            need: need_of(mask),
            op,
            negate: false,
            mask,
            a: if op == Op::Eq { a & mask } else { a },
            b: b << shift,
        }
    }

    /// The same test with "present and not" instead.
    pub fn negated(mut self) -> Test {
        self.negate = !self.negate;
        self
    }

    /// The comparison on the masked word `x`.
    pub fn compare(&self, x: u64) -> bool {
        let r = match self.op {
            Op::Eq => x == self.a,
            Op::Gt => x > self.a,
            Op::In => self.a <= x && x <= self.b,
        };
        r != self.negate
    }

    /// The outcome if it does not depend on the packet: a test that masks
    /// nothing needs no bytes and sees zero.
    pub fn constant(&self) -> Option<bool> {
        (self.mask == 0).then(|| self.compare(0))
    }

    /// Runs the test on `bytes`.
    pub fn eval(&self, bytes: &[u8]) -> bool {
        match load(bytes, self.offset, self.need) {
            Some(w) => self.compare(w & self.mask),
            None => false,
        }
    }
}

/// The eight bytes at `off` as a big-endian word, or `None` if the packet
/// ends before the `need` bytes a test looks at.
#[inline(always)]
fn load(bytes: &[u8], off: u16, need: u8) -> Option<u64> {
    let off = off as usize;
    // One compare, `off + 8 <= len`: the offset is 16 bits, so the end
    // cannot overflow and the slice is known to be eight bytes long.
    match bytes.get(off..off + 8).and_then(|s| s.first_chunk::<8>()) {
        Some(w) => Some(u64::from_be_bytes(*w)),
        None => load_short(bytes, off, need),
    }
}

/// The word at `off` when fewer than eight bytes remain: zero-padded if the
/// `need` bytes the test looks at are there.
#[cold]
fn load_short(bytes: &[u8], off: usize, need: u8) -> Option<u64> {
    if need == 0 {
        // The mask is zero: nothing to read, whatever the length.
        return Some(0);
    }
    let avail = bytes.len().checked_sub(off)?;
    if avail < need as usize {
        return None;
    }
    let mut w = [0u8; 8];
    let n = avail.min(8);
    w[..n].copy_from_slice(&bytes[off..off + n]);
    Some(u64::from_be_bytes(w))
}

/// A boolean expression over tests: one pattern before compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Always true or always false.
    Const(bool),
    /// One test.
    Test(Test),
    /// Logical negation (true on a packet too short for the inner tests).
    Not(Box<Expr>),
    /// All of these, tried in order.
    And(Vec<Expr>),
    /// Any of these, tried in order.
    Or(Vec<Expr>),
    /// `c ? a : b`, Click's ternary operator.
    Cond(Box<[Expr; 3]>),
}

impl Expr {
    /// Evaluates the expression directly on a packet: the meaning
    /// [`Program::build`] must preserve (the fuzz target and the tests
    /// compare the two).
    pub fn eval<H: Headers + ?Sized>(&self, h: &H) -> bool {
        match self {
            Expr::Const(b) => *b,
            Expr::Test(t) => t.eval(h.bytes(t.base)),
            Expr::Not(e) => !e.eval(h),
            Expr::And(v) => v.iter().all(|e| e.eval(h)),
            Expr::Or(v) => v.iter().any(|e| e.eval(h)),
            Expr::Cond(c) => {
                if c[0].eval(h) {
                    c[1].eval(h)
                } else {
                    c[2].eval(h)
                }
            }
        }
    }

    /// Negation that keeps short packets false ("present and not"), as
    /// Click's `negate_subtree(tree, true)` does for `!=`-style relations:
    /// De Morgan down to the tests, each test negated in place.
    pub fn negate_present(self) -> Expr {
        match self {
            Expr::Const(b) => Expr::Const(!b),
            Expr::Test(t) => Expr::Test(t.negated()),
            Expr::And(v) => Expr::Or(v.into_iter().map(Expr::negate_present).collect()),
            Expr::Or(v) => Expr::And(v.into_iter().map(Expr::negate_present).collect()),
            // Not used by the compilers; a plain negation is the closest.
            e @ (Expr::Not(_) | Expr::Cond(_)) => Expr::Not(Box::new(e)),
        }
    }
}

/// Supplies the bytes a test's [`Base`] names.
pub trait Headers {
    /// The bytes from the start of `base` to the end of the packet; empty
    /// when the packet has no such header.
    fn bytes(&self, base: Base) -> &[u8];
}

impl Headers for [u8] {
    #[inline(always)]
    fn bytes(&self, _base: Base) -> &[u8] {
        self
    }
}

/// An IP packet seen from its network header, with the transport header
/// where the IP header length says (Click's transport header annotation),
/// or for IPv6 behind the extension headers.
#[derive(Debug, Clone, Copy)]
pub struct IpHeaders<'a> {
    /// The Ethernet header in front of the IP header, or empty.
    pub link: &'a [u8],
    /// From the IP header to the end of the packet.
    pub network: &'a [u8],
    /// From the transport header to the end; empty if the packet ends
    /// with the IP header, and in IPv6 for a fragment other than the first
    /// or a chain that cannot be walked.
    pub transport: &'a [u8],
    /// [`Base::Upper`]'s bytes (IPv6 only), padded to a word so that a
    /// test loads them in one go.
    upper: [u8; 8],
    /// How many of them there are: 0 when the chain cannot be walked.
    upper_len: u8,
}

impl<'a> IpHeaders<'a> {
    /// Locates the transport header of the IP packet `ip`.
    #[inline]
    pub fn new(ip: &'a [u8]) -> IpHeaders<'a> {
        match ip.first() {
            Some(&b) if b >> 4 == 6 => IpHeaders::ipv6(ip),
            Some(&b) => IpHeaders {
                link: &[],
                network: ip,
                transport: ip.get(usize::from(b & 0x0f) * 4..).unwrap_or(&[]),
                upper: [0; 8],
                upper_len: 0,
            },
            None => IpHeaders {
                link: &[],
                network: ip,
                transport: &[],
                upper: [0; 8],
                upper_len: 0,
            },
        }
    }

    /// Like [`IpHeaders::new`], with `link` the Ethernet header in front
    /// of the IP header (its 14 bytes; fewer, or none, make the `ether`
    /// tests on the missing bytes false).
    #[inline]
    pub fn with_link(link: &'a [u8], ip: &'a [u8]) -> IpHeaders<'a> {
        IpHeaders {
            link,
            ..IpHeaders::new(ip)
        }
    }

    /// An IPv6 packet: TCP, UDP and ICMPv6 right after the fixed header
    /// cost one comparison; anything else walks the extension header
    /// chain, at most [`bricks_wire::ipv6ext::MAX_HEADERS`] headers
    /// (RFC 8200 section 4), so every packet costs a bounded time.
    #[inline]
    fn ipv6(ip: &'a [u8]) -> IpHeaders<'a> {
        match ip.get(6) {
            Some(&next @ (6 | 17 | 58)) => IpHeaders {
                link: &[],
                network: ip,
                transport: ip.get(40..).unwrap_or(&[]),
                upper: [next, 0, 0, 0, 0, 0, 0, 0],
                upper_len: 8,
            },
            Some(_) => IpHeaders::ipv6_chain(ip),
            None => IpHeaders {
                link: &[],
                network: ip,
                transport: &[],
                upper: [0; 8],
                upper_len: 0,
            },
        }
    }

    #[inline(never)]
    fn ipv6_chain(ip: &'a [u8]) -> IpHeaders<'a> {
        use bricks_wire::ipv6ext;
        // Link padding may follow the payload: the chain must end within
        // the payload length.
        let plen = ip
            .get(4..6)
            .map_or(0, |l| usize::from(u16::from_be_bytes([l[0], l[1]])));
        let packet = &ip[..ip.len().min(40 + plen)];
        match ipv6ext::walk(packet) {
            Ok(c) => {
                let later = c.fragment.is_some_and(|(_, off, _)| off != 0);
                let mut flags = 0;
                if c.fragment.is_some() {
                    flags |= UPPER_FRAGMENT;
                }
                if later {
                    flags |= UPPER_LATER_FRAGMENT;
                }
                IpHeaders {
                    link: &[],
                    network: ip,
                    transport: if later {
                        &[]
                    } else {
                        ip.get(c.upper_offset..).unwrap_or(&[])
                    },
                    upper: [c.upper, flags, 0, 0, 0, 0, 0, 0],
                    upper_len: 8,
                }
            }
            Err(_) => IpHeaders {
                link: &[],
                network: ip,
                transport: &[],
                upper: [0; 8],
                upper_len: 0,
            },
        }
    }
}

impl Headers for IpHeaders<'_> {
    #[inline(always)]
    fn bytes(&self, base: Base) -> &[u8] {
        match base {
            Base::Transport => self.transport,
            Base::Data | Base::Network => self.network,
            Base::Link => self.link,
            Base::Upper => &self.upper[..usize::from(self.upper_len)],
        }
    }
}

/// Jump targets: a node index, or a leaf (this bit set) naming an output.
const LEAF: u32 = 1 << 31;
/// The leaf for "no pattern matched".
const DROP: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Node {
    test: Test,
    /// Where to go when the test is false (`[0]`) or true (`[1]`).
    next: [u32; 2],
}

/// A node as the datapath runs it: every comparison is a range check,
/// `(x - lo) <= span` on the masked word, so a step is one load, mask,
/// subtract, compare and indexed jump whatever the operator.
#[derive(Debug, Clone, Copy)]
struct Step {
    mask: u64,
    lo: u64,
    span: u64,
    next: [u32; 2],
    offset: u16,
    need: u8,
    base: Base,
    /// Invert the range check (present-and-not, or an empty range).
    flip: bool,
}

impl Step {
    fn new(n: &Node) -> Step {
        let t = &n.test;
        let (lo, span, flip) = match t.op {
            Op::Eq => (t.a, 0, t.negate),
            Op::Gt if t.a < u64::MAX => (t.a + 1, u64::MAX - (t.a + 1), t.negate),
            Op::In if t.a <= t.b => (t.a, t.b - t.a, t.negate),
            // An empty range: "not in everything", still false when the
            // bytes are missing.
            Op::Gt | Op::In => (0, u64::MAX, !t.negate),
        };
        Step {
            mask: t.mask,
            lo,
            span,
            next: n.next,
            offset: t.offset,
            need: t.need,
            base: t.base,
            flip,
        }
    }

    #[inline(always)]
    fn eval(&self, bytes: &[u8]) -> bool {
        match load(bytes, self.offset, self.need) {
            Some(w) => ((w & self.mask).wrapping_sub(self.lo) <= self.span) != self.flip,
            None => false,
        }
    }
}

/// [`OneTest::raw`]'s and [`OneTest::test`]'s `AT` for a test at any
/// offset.
pub const ANY_OFFSET: u16 = u16::MAX;

/// A program of a single test whose two outcomes are outputs (or drops):
/// the shape of the usual `Classifier(12/0800, -)`. Run without the
/// interpreter's loop, it is one load, mask, compare and select.
#[derive(Debug, Clone, Copy)]
pub struct OneTest {
    step: Step,
    /// The output when the test is false (`[0]`) or true (`[1]`).
    out: [Option<usize>; 2],
    /// The test is an equality (a range of one value): the mask and the
    /// value in the byte order of a plain load of the eight bytes, so that
    /// the word is compared as loaded, without turning it big-endian.
    eq: bool,
    ne_mask: u64,
    ne_lo: u64,
}

impl OneTest {
    fn new(step: Step) -> OneTest {
        OneTest {
            step,
            out: step.next.map(leaf_output),
            eq: step.span == 0,
            // `from_be(w) & m == lo` exactly when `w & to_be(m) ==
            // to_be(lo)`: `from_be` is a bijection that commutes with `&`.
            ne_mask: step.mask.to_be(),
            ne_lo: step.lo.to_be(),
        }
    }

    /// [`Program::run`] on the bytes the test's base names (the packet
    /// data, for Classifier).
    #[inline(always)]
    pub fn classify(&self, bytes: &[u8]) -> Option<usize> {
        self.output(self.step.eval(bytes))
    }

    /// The output for the test's outcome, `None` to drop.
    #[inline(always)]
    pub fn output(&self, outcome: bool) -> Option<usize> {
        self.out[usize::from(outcome)]
    }

    /// Whether the test is an equality, which [`OneTest::test`] with `EQ`
    /// set runs without a byte swap.
    #[inline(always)]
    pub fn is_eq(&self) -> bool {
        self.eq
    }

    /// [`OneTest::test`] before a negated test (`!=`, `!`) is turned
    /// around: the outcome is `raw != flipped()`. A loop that needs one
    /// outcome for every packet compares the raw result, with nothing to
    /// turn around per packet.
    #[inline(always)]
    pub fn raw<const EQ: bool, const AT: u16>(&self, p: &Packet) -> bool {
        if !EQ {
            return self.step.eval(p.data()) != self.step.flip;
        }
        match p.chunk_at::<8>(self.offset::<AT>()) {
            Some(w) => u64::from_ne_bytes(*w) & self.ne_mask == self.ne_lo,
            None => self.step.eval(p.data()) != self.step.flip,
        }
    }

    /// The offset of the test's bytes: `AT` when it is not [`ANY_OFFSET`]
    /// (a batch loop specialised for the usual offset, which the loads
    /// then carry as a constant), else the test's own.
    #[inline(always)]
    fn offset<const AT: u16>(&self) -> usize {
        if AT == ANY_OFFSET {
            return usize::from(self.step.offset);
        }
        debug_assert_eq!(AT, self.step.offset);
        usize::from(AT)
    }

    /// The test's byte offset.
    #[inline(always)]
    pub fn at(&self) -> u16 {
        self.step.offset
    }

    /// Whether the test is negated; see [`OneTest::raw`].
    #[inline(always)]
    pub fn flipped(&self) -> bool {
        self.step.flip
    }

    /// The test's outcome on `bytes`; `EQ` must be [`OneTest::is_eq`].
    #[inline(always)]
    pub fn test<const EQ: bool, const AT: u16>(&self, p: &Packet) -> bool {
        if !EQ {
            return self.step.eval(p.data());
        }
        debug_assert!(self.eq);
        match p.chunk_at::<8>(self.offset::<AT>()) {
            Some(w) => (u64::from_ne_bytes(*w) & self.ne_mask == self.ne_lo) != self.step.flip,
            // Fewer than eight bytes left: the general test's short load.
            None => self.step.eval(p.data()),
        }
    }
}

/// The output a leaf names, `None` for [`DROP`].
fn leaf_output(t: u32) -> Option<usize> {
    (t != DROP).then_some((t & !LEAF) as usize)
}

/// Tests whose outcome the optimiser remembers along a path.
const MAX_FACTS: usize = 16;
/// Tests one edge may be moved past, which bounds compile time.
const MAX_DRIFT: usize = 64;

/// A compiled list of patterns.
#[derive(Clone)]
pub struct Program {
    steps: Box<[Step]>,
    /// The tests of `steps`, for display.
    nodes: Box<[Node]>,
    entry: u32,
}

impl Program {
    /// Compiles `patterns`: a packet goes to the output of the first one
    /// that holds, or is dropped.
    pub fn build(patterns: &[Expr]) -> Program {
        assert!(patterns.len() < (LEAF - 1) as usize, "too many patterns");
        let mut b = Builder::default();
        let mut next = DROP;
        for (i, e) in patterns.iter().enumerate().rev() {
            next = b.emit(e, LEAF | i as u32, next);
        }
        b.finish(next)
    }

    /// Number of tests in the program.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether a test reads the Ethernet header ([`Base::Link`]), which
    /// the caller must then supply.
    pub fn reads_link(&self) -> bool {
        self.nodes.iter().any(|n| n.test.base == Base::Link)
    }

    /// Whether every packet goes to one output (or none) without a test.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The program as a [`OneTest`], if it is one test whose outcomes
    /// are both leaves.
    pub fn one_test(&self) -> Option<OneTest> {
        if self.entry & LEAF != 0 {
            return None;
        }
        let step = *self.steps.get(self.entry as usize)?;
        if step.next.iter().any(|&t| t & LEAF == 0) {
            return None;
        }
        Some(OneTest::new(step))
    }

    /// The output for a packet, or `None` to drop it.
    #[inline]
    pub fn run<H: Headers + ?Sized>(&self, h: &H) -> Option<usize> {
        leaf_output(self.leaf(h))
    }

    /// The leaf a packet reaches, which [`Program::leaf_output`] turns
    /// into its output: two packets go the same way exactly when their
    /// leaves are equal, which a batch loop compares as they come.
    #[inline]
    pub fn leaf<H: Headers + ?Sized>(&self, h: &H) -> u32 {
        let mut t = self.entry;
        while t & LEAF == 0 {
            let s = &self.steps[t as usize];
            t = s.next[s.eval(h.bytes(s.base)) as usize];
        }
        t
    }

    /// The output a leaf from [`Program::leaf`] names, `None` to drop.
    #[inline(always)]
    pub fn leaf_output(leaf: u32) -> Option<usize> {
        leaf_output(leaf)
    }

    /// [`Program::leaf`] of a packet's data (Classifier's offsets).
    #[inline]
    pub fn classify_leaf(&self, data: &[u8]) -> u32 {
        self.leaf(data)
    }

    /// Classifies a packet by its data (Classifier's offsets).
    #[inline]
    pub fn classify(&self, data: &[u8]) -> Option<usize> {
        self.run(data)
    }

    /// Classifies an IP packet given from its IP header (IPClassifier's
    /// offsets).
    #[inline]
    pub fn classify_ip(&self, ip: &[u8]) -> Option<usize> {
        self.run(&IpHeaders::new(ip))
    }

    /// The leaf `data` (Classifier's offsets) reaches, with the
    /// [`Guard`] of its path when the path has one: a packet the guard
    /// holds for reaches the same leaf.
    pub fn guard(&self, data: &[u8]) -> (u32, Option<Guard>) {
        let mut path = arrayvec::ArrayVec::<(Step, bool), GUARD_PATH>::new();
        let mut whole = true;
        let mut t = self.entry;
        while t & LEAF == 0 {
            let s = &self.steps[t as usize];
            let outcome = s.eval(data);
            whole &= path.try_push((*s, outcome)).is_ok();
            t = s.next[usize::from(outcome)];
        }
        (
            t,
            if whole {
                Guard::new(t, &path, data)
            } else {
                None
            },
        )
    }

    /// Like [`Program::run`], also counting the tests it made.
    pub fn run_counting<H: Headers + ?Sized>(&self, h: &H) -> (Option<usize>, usize) {
        let mut t = self.entry;
        let mut steps = 0;
        while t & LEAF == 0 {
            let s = &self.steps[t as usize];
            steps += 1;
            t = s.next[s.eval(h.bytes(s.base)) as usize];
        }
        ((t != DROP).then_some((t & !LEAF) as usize), steps)
    }
}

/// Equalities a [`Guard`] merges into whole words, at most.
const GUARD_WORDS: usize = 4;
/// Other tests a [`Guard`] keeps, at most.
const GUARD_REST: usize = 4;
/// Longest path a [`Guard`] is made for.
const GUARD_PATH: usize = 16;

/// What a packet's data must hold to take the same path through a
/// [`Program`] as the packet the guard was made from, and so reach the
/// same leaf ([`Program::guard`]).
///
/// The path's true equalities are merged into one masked word per offset,
/// compared as loaded (no byte swap); a test on the path whose mask lies
/// inside such a word's is settled by it, whatever its operator and
/// outcome; the few others are kept with their outcome and run. With
/// `Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -)`, an IPv4
/// frame's path (`12/0806` false, `12/0800` true) becomes the one word
/// `12/0800`: a batch of IPv4 frames is checked with one load, mask and
/// compare a packet, where the interpreter makes two steps.
#[derive(Debug, Clone)]
pub struct Guard {
    leaf: u32,
    /// (offset, mask, value), the mask and value in the byte order of a
    /// plain load of the eight bytes at the offset, which must all be
    /// there.
    words: arrayvec::ArrayVec<(usize, u64, u64), GUARD_WORDS>,
    /// Tests on the path the words do not settle, with their outcome.
    rest: arrayvec::ArrayVec<(Step, bool), GUARD_REST>,
}

impl Guard {
    /// The guard of `path` (each step with its outcome on `data`, which
    /// reached `leaf`), if it is small enough and holds for `data` itself.
    fn new(leaf: u32, path: &[(Step, bool)], data: &[u8]) -> Option<Guard> {
        let mut words = arrayvec::ArrayVec::<(usize, u64, u64), GUARD_WORDS>::new();
        for &(s, outcome) in path {
            let equality = s.span == 0 && !s.flip && s.mask != 0;
            if !(outcome && equality) {
                continue;
            }
            let off = usize::from(s.offset);
            match words.iter_mut().find(|w| w.0 == off) {
                // Both hold on `data`, so they agree where the masks meet.
                Some(w) => {
                    w.1 |= s.mask;
                    w.2 |= s.lo;
                }
                None => words.try_push((off, s.mask, s.lo)).ok()?,
            }
        }
        let mut rest = arrayvec::ArrayVec::new();
        for &(s, outcome) in path {
            let settled = words
                .iter()
                .any(|&(off, mask, _)| off == usize::from(s.offset) && s.mask & !mask == 0);
            if !settled {
                rest.try_push((s, outcome)).ok()?;
            }
        }
        let words = words
            .into_iter()
            .map(|(off, mask, value)| (off, mask.to_be(), value.to_be()))
            .collect();
        let guard = Guard { leaf, words, rest };
        // A word past the end of `data` cannot be loaded whole: such a
        // packet's short loads are left to the interpreter.
        guard.holds(data).then_some(guard)
    }

    /// The leaf every packet the guard holds for reaches.
    #[inline(always)]
    pub fn leaf(&self) -> u32 {
        self.leaf
    }

    /// Whether `data` takes the guarded path. When it does, every test
    /// on the path loads the same masked bytes as on the guard's packet,
    /// or is run again here, so each comes out the same.
    #[inline(always)]
    pub fn holds(&self, data: &[u8]) -> bool {
        let mut ok = true;
        for &(off, mask, value) in &self.words {
            ok &= word_is(data, off, mask, value);
        }
        for (s, outcome) in &self.rest {
            ok &= s.eval(data) == *outcome;
        }
        ok
    }

    /// The guard's one word, when it is all there is to check.
    #[inline(always)]
    pub fn one_word(&self) -> Option<(usize, u64, u64)> {
        match (self.words.as_slice(), self.rest.is_empty()) {
            (&[w], true) => Some(w),
            _ => None,
        }
    }
}

/// Whether the eight bytes at `off` are there and, loaded as they lie,
/// equal `value` under `mask` (both from [`Guard::one_word`]).
#[inline(always)]
pub fn word_is(data: &[u8], off: usize, mask: u64, value: u64) -> bool {
    match data.get(off..off + 8).and_then(|w| w.first_chunk::<8>()) {
        Some(w) => u64::from_ne_bytes(*w) & mask == value,
        None => false,
    }
}

fn fmt_target(f: &mut fmt::Formatter<'_>, t: u32) -> fmt::Result {
    if t == DROP {
        write!(f, "drop")
    } else if t & LEAF != 0 {
        write!(f, "[{}]", t & !LEAF)
    } else {
        write!(f, "step {t}")
    }
}

/// One line per test, like Click's `program` handler.
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.nodes.is_empty() {
            write!(f, "all -> ")?;
            fmt_target(f, self.entry)?;
            return writeln!(f);
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let t = &n.test;
            let base = match t.base {
                Base::Data => "",
                Base::Link => "link",
                Base::Network => "ip",
                Base::Transport => "transp",
                Base::Upper => "ip6upper",
            };
            let op = match (t.op, t.negate) {
                (Op::Eq, false) => "==",
                (Op::Eq, true) => "!=",
                (Op::Gt, false) => ">",
                (Op::Gt, true) => "<=",
                (Op::In, false) => "in",
                (Op::In, true) => "not in",
            };
            write!(
                f,
                "{i:3} {base}[{}] & {:016x} {op} {:016x}",
                t.offset, t.mask, t.a
            )?;
            if t.op == Op::In {
                write!(f, "..{:016x}", t.b)?;
            }
            write!(f, "  yes->")?;
            fmt_target(f, n.next[1])?;
            write!(f, "  no->")?;
            fmt_target(f, n.next[0])?;
            writeln!(f)?;
        }
        Ok(())
    }
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[derive(Default)]
struct Builder {
    /// Nodes in creation order; every jump goes to an earlier node.
    nodes: Vec<Node>,
    shared: HashMap<Node, u32>,
}

impl Builder {
    /// Emits code for `e` that continues at `t` when it holds and at `f`
    /// when not; returns its entry.
    fn emit(&mut self, e: &Expr, t: u32, f: u32) -> u32 {
        match e {
            Expr::Const(true) => t,
            Expr::Const(false) => f,
            Expr::Test(x) => self.node(*x, t, f),
            Expr::Not(e) => self.emit(e, f, t),
            Expr::And(v) => v.iter().rev().fold(t, |t, e| self.emit(e, t, f)),
            Expr::Or(v) => v.iter().rev().fold(f, |f, e| self.emit(e, t, f)),
            Expr::Cond(c) => {
                let yes = self.emit(&c[1], t, f);
                let no = self.emit(&c[2], t, f);
                self.emit(&c[0], yes, no)
            }
        }
    }

    fn node(&mut self, test: Test, t: u32, f: u32) -> u32 {
        if t == f {
            return t;
        }
        if let Some(c) = test.constant() {
            return if c { t } else { f };
        }
        let node = Node { test, next: [f, t] };
        if let Some(&i) = self.shared.get(&node) {
            return i;
        }
        let i = self.nodes.len() as u32;
        self.nodes.push(node);
        self.shared.insert(node, i);
        i
    }

    fn finish(self, entry: u32) -> Program {
        // Number the nodes so that every jump goes forward, entry first.
        let n = self.nodes.len();
        let flip = |t: u32| {
            if t & LEAF != 0 {
                t
            } else {
                (n - 1 - t as usize) as u32
            }
        };
        let nodes: Vec<Node> = self
            .nodes
            .into_iter()
            .rev()
            .map(|mut nd| {
                nd.next = nd.next.map(flip);
                nd
            })
            .collect();
        let (mut nodes, entry) = compact(nodes, flip(entry));
        optimize(&mut nodes);
        let (nodes, entry) = compact(nodes, entry);
        Program {
            steps: nodes.iter().map(Step::new).collect(),
            nodes: nodes.into_boxed_slice(),
            entry,
        }
    }
}

/// Drops the nodes `entry` cannot reach and renumbers the rest (in order,
/// so jumps still go forward and the entry becomes node 0).
fn compact(nodes: Vec<Node>, entry: u32) -> (Vec<Node>, u32) {
    if entry & LEAF != 0 {
        return (Vec::new(), entry);
    }
    let mut reach = vec![false; nodes.len()];
    reach[entry as usize] = true;
    for i in entry as usize..nodes.len() {
        if reach[i] {
            for t in nodes[i].next {
                if t & LEAF == 0 {
                    reach[t as usize] = true;
                }
            }
        }
    }
    let mut map = vec![0u32; nodes.len()];
    let mut k = 0;
    for (i, r) in reach.iter().enumerate() {
        if *r {
            map[i] = k;
            k += 1;
        }
    }
    let remap = |t: u32| if t & LEAF != 0 { t } else { map[t as usize] };
    let out = nodes
        .into_iter()
        .zip(reach)
        .filter(|(_, r)| *r)
        .map(|(mut nd, _)| {
            nd.next = nd.next.map(remap);
            nd
        })
        .collect();
    (out, remap(entry))
}

/// What a packet that made `fact` with outcome `outcome` must give for
/// `t`, if that is decided.
fn implied(fact: &Test, outcome: bool, t: &Test) -> Option<bool> {
    if fact == t {
        return Some(outcome);
    }
    if fact.base != t.base
        || fact.offset != t.offset
        || fact.op != Op::Eq
        || t.op != Op::Eq
        || fact.negate
        || t.negate
    {
        return None;
    }
    if outcome {
        // The bytes are there and equal `fact.a` under `fact.mask`.
        if t.mask & !fact.mask == 0 {
            return Some(fact.a & t.mask == t.a);
        }
        if (fact.a ^ t.a) & fact.mask & t.mask != 0 {
            return Some(false);
        }
    } else if fact.mask & !t.mask == 0 && t.a & fact.mask == fact.a {
        // `t` true would make `fact` true.
        return Some(false);
    }
    None
}

/// Moves edges past tests their path has already decided. Nodes must be in
/// topological order with the entry at 0.
fn optimize(nodes: &mut [Node]) {
    let mut facts: Vec<Option<Vec<(Test, bool)>>> = vec![None; nodes.len()];
    if let Some(f) = facts.first_mut() {
        *f = Some(Vec::new());
    }
    for i in 0..nodes.len() {
        // Nodes nothing reaches any more have no facts; `compact` drops
        // them.
        let Some(known) = facts[i].take() else {
            continue;
        };
        for outcome in [false, true] {
            let mut f = known.clone();
            if f.len() == MAX_FACTS {
                f.remove(0);
            }
            f.push((nodes[i].test, outcome));
            let mut t = nodes[i].next[outcome as usize];
            for _ in 0..MAX_DRIFT {
                if t & LEAF != 0 {
                    break;
                }
                let nd = &nodes[t as usize];
                if nd.next[0] == nd.next[1] {
                    t = nd.next[0];
                    continue;
                }
                let decided = f
                    .iter()
                    .rev()
                    .find_map(|(fact, o)| implied(fact, *o, &nd.test));
                match decided {
                    Some(v) => t = nd.next[v as usize],
                    None => break,
                }
            }
            nodes[i].next[outcome as usize] = t;
            if t & LEAF == 0 {
                let slot = &mut facts[t as usize];
                match slot {
                    None => *slot = Some(f),
                    Some(g) => g.retain(|x| f.contains(x)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq16(offset: u16, v: u16) -> Expr {
        Expr::Test(Test::eq(Base::Data, offset, 0xffff << 48, (v as u64) << 48))
    }

    #[test]
    fn steps_agree_with_tests() {
        let words = [0, 1, 0x7f, 0x80, u64::MAX - 1, u64::MAX];
        for op in [Op::Eq, Op::Gt, Op::In] {
            for a in words {
                for b in words {
                    for negate in [false, true] {
                        let t = Test {
                            base: Base::Data,
                            offset: 0,
                            need: 8,
                            op,
                            negate,
                            mask: u64::MAX,
                            a,
                            b,
                        };
                        let s = Step::new(&Node {
                            test: t,
                            next: [0, 1],
                        });
                        for x in words {
                            let bytes = x.to_be_bytes();
                            assert_eq!(s.eval(&bytes), t.eval(&bytes), "{t:?} on {x:#x}");
                        }
                        assert!(!s.eval(&[0; 7]), "short: {t:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn field_places_bits() {
        // IP header length: the low nibble of byte 0.
        let t = Test::field(Base::Network, 4, 4, 0xf, Op::Eq, 5, 0);
        assert_eq!(t.offset, 0);
        assert_eq!(t.need, 1);
        assert!(t.eval(&[0x45]));
        assert!(!t.eval(&[0x46]));
        assert!(!t.eval(&[]));
        // TCP destination port > 1023, at bytes 2-3.
        let t = Test::field(Base::Transport, 16, 16, 0xffff, Op::Gt, 1023, 0);
        assert_eq!((t.offset, t.need), (2, 2));
        assert!(t.eval(&[0, 0, 0x04, 0x00]));
        assert!(!t.eval(&[0, 0, 0x03, 0xff]));
        assert!(!t.eval(&[0, 0, 0x04]), "short packet");
    }

    #[test]
    fn negated_test_is_false_on_short_packets() {
        let t = Test::eq(Base::Data, 2, 0xff << 56, 7 << 56).negated();
        assert!(t.eval(&[0, 0, 8]));
        assert!(!t.eval(&[0, 0, 7]));
        assert!(!t.eval(&[0, 0]));
        let not = Program::build(&[Expr::Not(Box::new(Expr::Test(Test::eq(
            Base::Data,
            2,
            0xff << 56,
            7 << 56,
        ))))]);
        assert_eq!(not.classify(&[0, 0]), Some(0), "logical not is true");
    }

    #[test]
    fn repeated_test_is_skipped() {
        let p = Program::build(&[
            Expr::And(vec![eq16(12, 0x0806), eq16(20, 1)]),
            Expr::And(vec![eq16(12, 0x0806), eq16(20, 2)]),
            eq16(12, 0x0800),
            Expr::Const(true),
        ]);
        let mut ip = [0u8; 34];
        ip[12] = 8;
        assert_eq!(p.run_counting(&ip[..]), (Some(2), 2), "{p}");
        let mut arp = [0u8; 42];
        arp[12..14].copy_from_slice(&[8, 6]);
        arp[20..22].copy_from_slice(&[0, 2]);
        assert_eq!(p.run_counting(&arp[..]), (Some(1), 3), "{p}");
        assert_eq!(p.classify(&[0; 10]), Some(3));
    }

    #[test]
    fn constants_need_no_tests() {
        let p = Program::build(&[Expr::Const(false), Expr::Const(true)]);
        assert!(p.is_empty());
        assert_eq!(p.classify(&[]), Some(1));
        let p = Program::build(&[Expr::Const(false)]);
        assert_eq!(p.classify(&[]), None);
        assert_eq!(p.to_string(), "all -> drop\n");
    }

    #[test]
    fn ternary() {
        let c = Expr::Cond(Box::new([eq16(0, 1), eq16(2, 2), eq16(4, 3)]));
        let p = Program::build(&[c]);
        assert_eq!(p.classify(&[0, 1, 0, 2, 0, 0]), Some(0));
        assert_eq!(p.classify(&[0, 1, 0, 0, 0, 3]), None);
        assert_eq!(p.classify(&[0, 0, 0, 0, 0, 3]), Some(0));
    }

    #[test]
    fn ip_headers_locate_transport() {
        let mut ip = [0u8; 24];
        ip[0] = 0x45;
        ip[20] = 0xaa;
        let h = IpHeaders::new(&ip);
        assert_eq!(h.transport, &[0xaa, 0, 0, 0]);
        assert!(IpHeaders::new(&ip[..20]).transport.is_empty());
        assert!(IpHeaders::new(&[]).transport.is_empty());
    }

    /// An IPv6 packet whose fixed header names `first`, with `ext` then
    /// `upper` as its payload.
    fn ip6(first: u8, ext: &[u8], upper: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0];
        p.extend(((ext.len() + upper.len()) as u16).to_be_bytes());
        p.extend([first, 64]);
        p.extend([0x20; 32]);
        p.extend(ext);
        p.extend(upper);
        p
    }

    #[test]
    fn ipv6_headers_walk_extension_headers() {
        let tcp = [0x9c, 0x40, 0, 80, 0, 0, 0, 1];
        // Straight TCP.
        let p = ip6(6, &[], &tcp);
        let h = IpHeaders::new(&p);
        assert_eq!(
            (h.transport, &h.bytes(Base::Upper)[..2]),
            (&tcp[..], &[6, 0][..])
        );
        // Hop-by-Hop, Routing (type 0, no segments left), Destination
        // Options, first Fragment, then TCP.
        let mut ext = vec![43, 0, 1, 4, 0, 0, 0, 0];
        ext.extend([60, 0, 0, 0, 0, 0, 0, 0]);
        ext.extend([44, 0, 1, 4, 0, 0, 0, 0]);
        ext.extend([6, 0, 0x00, 0x01, 0, 0, 0, 7]);
        let p = ip6(0, &ext, &tcp);
        let h = IpHeaders::new(&p);
        assert_eq!(h.transport, &tcp[..]);
        assert_eq!(&h.bytes(Base::Upper)[..2], &[6, UPPER_FRAGMENT]);
        // A later fragment: no transport header.
        let p = ip6(44, &[6, 0, 0x05, 0x00, 0, 0, 0, 7], &tcp);
        let h = IpHeaders::new(&p);
        assert!(h.transport.is_empty());
        assert_eq!(
            &h.bytes(Base::Upper)[..2],
            &[6, UPPER_FRAGMENT | UPPER_LATER_FRAGMENT]
        );
        // A chain running past the payload length (padding behind it does
        // not count), or that never ends: nothing.
        let mut p = ip6(60, &[6, 1, 0, 0, 0, 0, 0, 0], &[]);
        p.extend([0; 16]);
        let h = IpHeaders::new(&p);
        assert!(h.transport.is_empty() && h.bytes(Base::Upper).is_empty());
        let p = ip6(60, &[60, 0, 0, 0, 0, 0, 0, 0].repeat(20), &tcp);
        let h = IpHeaders::new(&p);
        assert!(h.transport.is_empty() && h.bytes(Base::Upper).is_empty());
        assert!(IpHeaders::new(&p[..6]).bytes(Base::Upper).is_empty());
    }

    /// Click's router classifier: an IPv4 frame's two tests come down
    /// to one word, which other IPv4 frames keep to and ARP frames and
    /// frames too short for the word do not.
    #[test]
    fn a_guard_merges_a_path_into_one_word() {
        let eq16 = |off, v: u64| Expr::Test(Test::eq(Base::Data, off, 0xffff << 48, v << 48));
        let p = Program::build(&[
            Expr::And(vec![eq16(12, 0x0806), eq16(20, 1)]),
            Expr::And(vec![eq16(12, 0x0806), eq16(20, 2)]),
            eq16(12, 0x0800),
            Expr::Const(true),
        ]);
        let frame = |ethertype: u16, fill: u8, len: usize| {
            let mut f = vec![fill; len];
            f[12..14].copy_from_slice(&ethertype.to_be_bytes());
            f
        };
        let (leaf, guard) = p.guard(&frame(0x0800, 0, 60));
        assert_eq!(Program::leaf_output(leaf), Some(2));
        let g = guard.expect("a guard");
        assert_eq!(
            g.one_word(),
            Some((12, (0xffffu64 << 48).to_be(), (0x0800u64 << 48).to_be()))
        );
        assert!(g.holds(&frame(0x0800, 0xab, 64)));
        assert!(g.holds(&frame(0x0800, 0xab, 20)));
        assert!(!g.holds(&frame(0x0800, 0xab, 19)));
        assert!(!g.holds(&frame(0x0806, 0, 60)));
        // An ARP request's path keeps the word at 20 as well.
        let mut arp = frame(0x0806, 0, 42);
        arp[20..22].copy_from_slice(&[0, 1]);
        let (leaf, guard) = p.guard(&arp);
        assert_eq!(Program::leaf_output(leaf), Some(0));
        let g = guard.expect("a guard");
        assert!(g.one_word().is_none());
        assert!(g.holds(&arp));
        arp[21] = 2;
        assert!(!g.holds(&arp));
        // A frame that ends inside the word has no guard: its short load
        // is the interpreter's.
        let (leaf, guard) = p.guard(&frame(0x0800, 0, 16));
        assert_eq!(Program::leaf_output(leaf), Some(2));
        assert!(guard.is_none());
    }

    use proptest::prelude::*;

    /// Bytes from a small alphabet, so that tests often agree.
    fn byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            Just(0u8),
            Just(1),
            Just(0x0f),
            Just(0xf0),
            Just(0xff),
            any::<u8>()
        ]
    }

    fn test() -> impl Strategy<Value = Test> {
        let mask = prop_oneof![
            Just(0xffu64 << 56),
            Just(0xffffu64 << 48),
            Just(0xf0u64 << 56),
            Just(0x0fu64 << 56),
            Just(0x00ffu64 << 48),
            Just(0),
            any::<u64>(),
        ];
        (
            0u16..6,
            mask,
            prop::collection::vec(byte(), 8),
            0u8..3,
            any::<bool>(),
            any::<u64>(),
        )
            .prop_map(|(offset, mask, v, op, negate, b)| {
                let a = u64::from_be_bytes(v.try_into().unwrap());
                let mut t = Test::eq(Base::Data, offset, mask, a);
                t.op = [Op::Eq, Op::Gt, Op::In][op as usize];
                if t.op != Op::Eq {
                    t.a = a & mask;
                    t.b = t.a.max(b & mask);
                }
                t.negate = negate;
                t
            })
    }

    fn expr() -> impl Strategy<Value = Expr> {
        let leaf =
            prop_oneof![1 => any::<bool>().prop_map(Expr::Const), 6 => test().prop_map(Expr::Test)];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| Expr::Not(Box::new(e))),
                prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::And),
                prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Or),
                (inner.clone(), inner.clone(), inner)
                    .prop_map(|(a, b, c)| Expr::Cond(Box::new([a, b, c]))),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn compiled_program_matches_expressions(
            patterns in prop::collection::vec(expr(), 1..5),
            packets in prop::collection::vec(prop::collection::vec(byte(), 0..12), 16),
        ) {
            let p = Program::build(&patterns);
            for bytes in &packets {
                let want = patterns.iter().position(|e| e.eval(&bytes[..]));
                prop_assert_eq!(p.classify(bytes), want, "{:?} on {:02x?}\n{}", patterns, bytes, p);
            }
        }

        /// A packet a guard holds for reaches the guard's leaf, and the
        /// guard of a packet's path holds for that packet.
        #[test]
        fn guards_keep_to_their_leaf(
            patterns in prop::collection::vec(expr(), 1..5),
            packets in prop::collection::vec(prop::collection::vec(byte(), 0..16), 16),
        ) {
            let p = Program::build(&patterns);
            for a in &packets {
                let (leaf, guard) = p.guard(a);
                prop_assert_eq!(leaf, p.classify_leaf(a));
                let Some(g) = guard else { continue };
                prop_assert_eq!(g.leaf(), leaf);
                prop_assert!(g.holds(a), "{:?} on {:02x?}\n{}", g, a, p);
                for b in &packets {
                    if g.holds(b) {
                        prop_assert_eq!(p.classify_leaf(b), leaf, "{:?} on {:02x?}\n{}", g, b, p);
                    }
                    if let Some((off, mask, value)) = g.one_word() {
                        prop_assert_eq!(word_is(b, off, mask, value), g.holds(b));
                    }
                }
            }
        }
    }
}
