//! `AnonymizeIPAddr`: prefix-preserving anonymization of the IPv4 source
//! and destination addresses (Click's `elements/analysis/anonipaddr.cc`,
//! after Greg Minshall's tcpdpriv `-A50`).
//!
//! The addresses seen so far form a binary tree ([`Tree`]): a new address
//! becomes the peer of the node it first differs from, and its output
//! keeps that node's output up to the first differing bit, flips that
//! bit and draws the rest at random. Two inputs sharing a p-bit prefix
//! thus map to outputs sharing a p-bit prefix. The draws come from
//! Click's shared random stream ([`bricks_element::click_random`]), in
//! Click's order, so that a configuration seeded with `RandomSeed` maps
//! every address as Click does.
//!
//! Hostile traffic shows the element every address it likes, and each
//! new one costs two nodes: the tree holds at most CAPACITY addresses,
//! and a packet bringing a new address beyond that is dropped and
//! counted (Click maps it to 0.0.0.0 when it runs out of memory). Nodes
//! live in fixed-size chunks, so growing the tree never copies it: a
//! lookup walks at most 33 nodes and allocates at most one chunk.

use bricks_element::{
    click_random, ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_packet::MAX_BATCH;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `AnonymizeIPAddr` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AnonymizeIPAddr",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: addresses the tree holds at most (32 MB of nodes).
pub const DEFAULT_CAPACITY: usize = 1 << 20;
/// Largest CAPACITY (512 MB of nodes).
pub const MAX_CAPACITY: usize = 1 << 24;

static MANUAL: Manual = Manual {
    summary: "anonymizes top-level IP addresses in passing packets",
    synopsis: "AnonymizeIPAddr([KEYWORDS])",
    description: "Anonymizes the source and destination addresses of passing IPv4 packets, \
        at the network header annotation. The mapping is prefix-preserving: two input \
        addresses sharing a p-bit prefix map to outputs sharing a p-bit prefix. It is \
        tcpdpriv's `-A50` as Click implements it, drawing from the random stream \
        `RandomSeed` seeds: with the same seed, and the addresses met in the same order, \
        bricks maps every address as Click does. 0.0.0.0 and 255.255.255.255 map to \
        themselves. The IP header checksum is updated incrementally (right if and only if \
        it was right before); TCP and UDP checksums are left as they are, as in Click, so \
        they no longer match the new addresses. In an ICMP error (unreachable, time \
        exceeded, parameter problem, source quench, redirect) the addresses of the quoted \
        IP header are anonymized too and the ICMP checksum updated; the quoted header's own \
        checksum is not. Packets without a network header annotation, or whose header is \
        not version 4, leave by output 1, or are dropped. The `map` read handler takes an \
        address and tells its anonymized form (Click's `CLICK_LLRPC_MAP_IPADDRESS`); \
        `addresses` tells how many addresses the tree holds. SEED is read and ignored, as \
        in Click. Differences from Click: the tree holds at most CAPACITY addresses, and a \
        packet bringing a new address beyond that is dropped and counted in `refused` \
        (Click maps the address to 0.0.0.0 when out of memory); a packet whose IPv4 header \
        is cut short of its addresses is dropped and counted in `truncated` (Click reads \
        past its end); unseeded, bricks' random stream starts at seed 1, so runs repeat \
        (Click seeds it from the system's randomness); with several workers the tree is \
        shared, and the order packets reach it, hence the mapping, may differ from run to \
        run. CLASS 32 (and 99) keeps Click's x86 behaviour, where the shift by 32 preserves \
        nothing and makes 0.0.0.0 the tree's root.",
    ports: "one input, push or pull; output 0 like the input, output 1 (optional) push",
    keywords: &[
        Keyword {
            name: "CLASS",
            ty: "integer",
            default: Some("0"),
            doc: "preserve this many leading one bits (1: class A, 2: class B, 3: class C, \
                  4: class D); up to 32, 99 meaning 32",
        },
        Keyword {
            name: "PRESERVE_8",
            ty: "space-separated integers 0-255",
            default: Some("none"),
            doc: "8-bit prefixes mapped to themselves (prefix preservation then fixes or \
                  permutes nearby nets: PRESERVE_8 18 maps net 19 to itself)",
        },
        Keyword {
            name: "SEED",
            ty: "boolean",
            default: Some("true"),
            doc: "accepted and ignored, as in Click (seed with RandomSeed)",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("1048576"),
            doc: "most addresses the tree holds; from 1 to 16777216",
        },
    ],
    counters: &[
        ("anonymized", "packets whose addresses were anonymized"),
        (
            "not_ip",
            "packets without an IPv4 network header (output 1, or dropped)",
        ),
        (
            "truncated",
            "packets dropped because their IPv4 header ends before the addresses",
        ),
        (
            "refused",
            "packets dropped because a new address found the tree full (CAPACITY)",
        ),
    ],
    example: "RandomSeed(1);\n\
              InfiniteSource(DATA \\<45 00 00 1c 00 01 00 00 40 11 66 ce 0a 00 00 01 0a 00 00 02 \
              04 d2 00 35 00 08 e6 d4>, LIMIT 1, STOP true)\n\
              -> MarkIPHeader -> AnonymizeIPAddr(PRESERVE_8 10) -> Discard;",
    see_also: &[
        "RandomSeed",
        "EraseIPPayload",
        "TruncateIPPayload",
        "ToIPSummaryDump",
    ],
};

/// What the element was configured with, for the tree it makes at its
/// first address.
#[derive(Debug, Clone)]
struct Config {
    preserve_class: i64,
    preserve_8: Vec<u8>,
    capacity: usize,
}

/// The tree every worker's instance shares, made when the first worker
/// starts (Click's `initialize`, after every element was configured and
/// `RandomSeed` has seeded the stream).
#[derive(Debug)]
struct Shared {
    config: Config,
    tree: Mutex<Option<Tree>>,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut preserve_class = args.read::<i64>("CLASS")?.unwrap_or(0);
    let preserve_8 = args.read::<String>("PRESERVE_8")?.unwrap_or_default();
    let _seed_ignored = args.read::<bool>("SEED")?;
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    if preserve_class == 99 {
        preserve_class = 32;
    } else if !(i64::from(i32::MIN)..=32).contains(&preserve_class) {
        return Err(ArgError::new("CLASS must be between 0 and 32"));
    }
    let preserve_8 = preserve_8
        .split_ascii_whitespace()
        .map(|w| {
            w.parse::<u8>()
                .map_err(|_| ArgError::new("PRESERVE_8 expects integer between 0 and 255"))
        })
        .collect::<Result<Vec<u8>, ArgError>>()?;
    // Each preserved net adds at most one address to the root's.
    if capacity <= preserve_8.len() {
        return Err(ArgError::new(format!(
            "CAPACITY {capacity}: the {} PRESERVE_8 nets need {} addresses",
            preserve_8.len(),
            preserve_8.len() + 1
        )));
    }
    let config = Config {
        preserve_class,
        preserve_8,
        capacity,
    };
    let sh = args.shared(|_| {
        Ok(Shared {
            config,
            tree: Mutex::new(None),
        })
    })?;
    Ok(Box::new(AnonymizeIPAddr {
        sh,
        two_outputs: ports.noutputs() > 1,
        anonymized: 0,
        not_ip: 0,
        truncated: 0,
        refused: 0,
    }))
}

/// Click's `rand32()`: a draw from the shared stream over the whole 32
/// bits (two draws of `random()`).
fn rand32() -> u32 {
    click_random::random_between(0, u32::MAX)
}

/// Click's `ffs_msb`: the 1-based position of the highest set bit, from
/// the top (0x80000000 gives 1, 1 gives 32), 0 for 0.
fn ffs_msb(x: u32) -> u32 {
    if x == 0 {
        0
    } else {
        x.leading_zeros() + 1
    }
}

/// Index of no node.
const NONE: u32 = u32::MAX;
const CHUNK_BITS: u32 = 12;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A node of the tree (Click's `Node`), children by index.
#[derive(Debug, Clone, Copy)]
struct Node {
    input: u32,
    output: u32,
    child: [u32; 2],
}

/// What a lookup found: a node of the tree, or one of the special
/// addresses 0.0.0.0 and 255.255.255.255, which never enter it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Node(u32),
    Special(u32),
}

/// The addresses seen and their outputs, as Click's and tcpdpriv's tree.
/// Addresses are in host byte order. `rand` stands for Click's `rand32`.
#[derive(Debug)]
struct Tree {
    /// Nodes in chunks of [`CHUNK`], each allocated whole, so that a
    /// growing tree is never copied.
    chunks: Vec<Vec<Node>>,
    nodes: usize,
    addresses: usize,
    capacity: usize,
}

/// The root's index.
const ROOT: u32 = 0;

impl Tree {
    /// Click's `initialize`: the root with a random output, then CLASS and
    /// PRESERVE_8 fixed in it. `None` if `capacity` cannot hold the
    /// preserved nets.
    fn new(config: &Config, rand: &mut impl FnMut() -> u32) -> Option<Tree> {
        let mut t = Tree {
            chunks: Vec::new(),
            nodes: 0,
            addresses: 1,
            capacity: config.capacity,
        };
        // Use 1 instead of 0: 0.0.0.0 is special.
        let output = rand();
        t.alloc(Node {
            input: 1,
            output,
            child: [NONE; 2],
        });
        let mut touched = false;
        if config.preserve_class > 0 {
            // Click's `~(0xFFFFFFFFU >> CLASS)`: on x86 a shift by 32 is
            // taken modulo 32, so CLASS 32 makes the mask 0.
            let mask = !u32::MAX.wrapping_shr(config.preserve_class as u32);
            let root = t.node_mut(ROOT);
            root.input = mask;
            root.output |= mask;
            touched = true;
        }
        for &net in &config.preserve_8 {
            let addr = u32::from(net) << 24;
            if !touched {
                let root = t.node_mut(ROOT);
                root.input = addr;
                root.output = (root.output & 0x00FF_FFFF) | addr;
                touched = true;
            } else {
                match t.find(addr, rand)? {
                    Found::Node(n) => {
                        let n = t.node_mut(n);
                        n.output = (n.output & 0x00FF_FFFF) | addr;
                    }
                    // Click sets the special node's output, then clears it.
                    Found::Special(_) => {}
                }
            }
        }
        Some(t)
    }

    fn node(&self, i: u32) -> &Node {
        &self.chunks[(i >> CHUNK_BITS) as usize][i as usize & (CHUNK - 1)]
    }

    fn node_mut(&mut self, i: u32) -> &mut Node {
        &mut self.chunks[(i >> CHUNK_BITS) as usize][i as usize & (CHUNK - 1)]
    }

    fn alloc(&mut self, n: Node) -> u32 {
        let i = self.nodes;
        if i.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        if let Some(last) = self.chunks.last_mut() {
            last.push(n);
        }
        self.nodes += 1;
        i as u32
    }

    /// Addresses the tree holds.
    fn addresses(&self) -> usize {
        self.addresses
    }

    /// Click's `make_output`: the first `swivel - 1` bits of `old`, bit
    /// `swivel` flipped, the rest random (Click's `& 0x7FFFFFFF` leaves
    /// the bit after the swivel 0).
    fn make_output(old: u32, swivel: u32, rand: &mut impl FnMut() -> u32) -> u32 {
        if swivel == 32 {
            old ^ 1
        } else {
            let known = ((old >> (32 - swivel)) ^ 1) << (32 - swivel);
            known | ((rand() & 0x7FFF_FFFF) >> swivel)
        }
    }

    /// Click's `make_peer`: `a` becomes the peer of node `n`, which moves
    /// down a level. `None` when the tree is full.
    fn make_peer(&mut self, a: u32, n: u32, rand: &mut impl FnMut() -> u32) -> Option<Found> {
        if a == 0 || a == u32::MAX {
            return Some(Found::Special(a));
        }
        if self.addresses >= self.capacity {
            return None;
        }
        self.addresses += 1;
        let old = *self.node(n);
        // The first bit in which `a` and the node's input differ.
        let swivel = ffs_msb(a ^ old.input);
        let bit = ((a >> (32 - swivel)) & 1) as usize;
        let mine = Node {
            input: a,
            output: Self::make_output(old.output, swivel, rand),
            child: [NONE; 2],
        };
        let mut down = [old, old];
        down[bit] = mine;
        let d0 = self.alloc(down[0]);
        let d1 = self.alloc(down[1]);
        // Ones to the right: the parent takes its right child's values.
        let parent = self.node_mut(n);
        parent.input = down[1].input;
        parent.output = down[1].output;
        parent.child = [d0, d1];
        Some(Found::Node(if bit == 0 { d0 } else { d1 }))
    }

    /// Click's `find_node` ("straight outta tcpdpriv"): the node of `a`,
    /// made if it is new. At most 33 levels: each step down fixes a
    /// later bit.
    fn find(&mut self, a: u32, rand: &mut impl FnMut() -> u32) -> Option<Found> {
        let mut n = ROOT;
        loop {
            let node = *self.node(n);
            if node.input == a {
                return Some(Found::Node(n));
            }
            if node.child[0] == NONE {
                return self.make_peer(a, n, rand);
            }
            let [c0, c1] = node.child;
            // The first bit in which the two children differ.
            let swivel = ffs_msb(self.node(c0).input ^ self.node(c1).input);
            if ffs_msb(a ^ node.input) < swivel {
                return self.make_peer(a, n, rand);
            }
            n = if a & (1u32 << (32 - swivel)) != 0 {
                c1
            } else {
                c0
            };
        }
    }

    /// The anonymized form of `a` (host byte order); `None` when `a` is
    /// new and the tree is full.
    fn anonymize(&mut self, a: u32, rand: &mut impl FnMut() -> u32) -> Option<u32> {
        Some(match self.find(a, rand)? {
            Found::Node(n) => self.node(n).output,
            Found::Special(v) => v,
        })
    }
}

/// Why a packet was not anonymized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// No network header annotation, or not IP version 4.
    NotIp,
    /// The header ends before the addresses.
    Truncated,
    /// A new address found the tree full.
    Full,
}

/// ICMP types whose body quotes an IP header (Click's `handle_icmp`):
/// unreachable, source quench, redirect, time exceeded, parameter
/// problem.
fn quotes_header(icmp_type: u8) -> bool {
    matches!(icmp_type, 3 | 4 | 5 | 11 | 12)
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Click's incremental checksum update for two replaced addresses
/// (RFC 1624: `~(~old + ~old_words + new_words)`), with Click's folding,
/// so that the bytes are Click's even for the two forms of zero.
fn update_sum(sum: u16, old: [u32; 2], new: [u32; 2]) -> u16 {
    let mut s = u32::from(!sum);
    for a in old {
        let a = !a;
        s += (a & 0xFFFF) + (a >> 16);
    }
    for a in new {
        s += (a & 0xFFFF) + (a >> 16);
    }
    s = (s & 0xFFFF) + (s >> 16);
    !((s + (s >> 16)) as u16)
}

/// Anonymizes `p`'s addresses in `tree`, drawing new outputs from `rand`.
fn anonymize(
    tree: &mut Tree,
    p: &mut Packet,
    rand: &mut impl FnMut() -> u32,
) -> Result<(), Refusal> {
    let Some(ip) = p.network_header_mut() else {
        return Err(Refusal::NotIp);
    };
    if ip.first().map(|b| b >> 4) != Some(4) {
        return Err(Refusal::NotIp);
    }
    if ip.len() < 20 {
        return Err(Refusal::Truncated);
    }
    let old = [be32(ip, 12), be32(ip, 16)];
    let new = [
        tree.anonymize(old[0], rand).ok_or(Refusal::Full)?,
        tree.anonymize(old[1], rand).ok_or(Refusal::Full)?,
    ];
    let sum = u16::from_be_bytes([ip[10], ip[11]]);
    ip[10..12].copy_from_slice(&update_sum(sum, old, new).to_be_bytes());
    ip[12..16].copy_from_slice(&new[0].to_be_bytes());
    ip[16..20].copy_from_slice(&new[1].to_be_bytes());
    // The quoted header of an ICMP error, read after the outer addresses
    // were written, as Click does (with an IP header length under 20 the
    // two overlap). A packet left half done by a full tree is dropped.
    // The ICMP header is where Click's MarkIPHeader puts the transport
    // header: the IP header length on from the IP header, for any
    // fragment.
    if ip[9] != 1 {
        return Ok(());
    }
    let icmp_at = usize::from(ip[0] & 0x0F) * 4;
    let Some(icmp) = ip.get_mut(icmp_at..) else {
        return Ok(());
    };
    if icmp.len() <= 8 || !quotes_header(icmp[0]) {
        return Ok(());
    }
    let hlen = usize::from(icmp[8] & 0x0F) * 4;
    if hlen < 20 || icmp.len() < 8 + hlen + 8 {
        return Ok(());
    }
    let old = [be32(icmp, 8 + 12), be32(icmp, 8 + 16)];
    let new = [
        tree.anonymize(old[0], rand).ok_or(Refusal::Full)?,
        tree.anonymize(old[1], rand).ok_or(Refusal::Full)?,
    ];
    icmp[8 + 12..8 + 16].copy_from_slice(&new[0].to_be_bytes());
    icmp[8 + 16..8 + 20].copy_from_slice(&new[1].to_be_bytes());
    let sum = u16::from_be_bytes([icmp[2], icmp[3]]);
    icmp[2..4].copy_from_slice(&update_sum(sum, old, new).to_be_bytes());
    Ok(())
}

/// One worker's AnonymizeIPAddr.
#[derive(Debug)]
pub struct AnonymizeIPAddr {
    sh: Arc<Shared>,
    two_outputs: bool,
    anonymized: u64,
    not_ip: u64,
    truncated: u64,
    refused: u64,
}

/// The verdicts of one batch: output 0, 1, or a drop.
type Verdicts = [Option<u8>; MAX_BATCH];

impl Shared {
    /// The tree, made on first use.
    fn tree(&self) -> MutexGuard<'_, Option<Tree>> {
        let mut g = self.tree.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            // `new` fails only for a capacity `make` refused.
            *g = Tree::new(&self.config, &mut rand32);
        }
        g
    }
}

impl AnonymizeIPAddr {
    /// Anonymizes every packet of `batch` under one lock of the tree and
    /// tells where each goes.
    fn verdicts(&mut self, batch: &mut Batch) -> Verdicts {
        let mut v: Verdicts = [None; MAX_BATCH];
        let sh = Arc::clone(&self.sh);
        let mut g = sh.tree();
        let Some(tree) = g.as_mut() else {
            return v;
        };
        for (v, p) in v.iter_mut().zip(batch.iter_mut()) {
            *v = match anonymize(tree, p, &mut rand32) {
                Ok(()) => {
                    self.anonymized += 1;
                    Some(0)
                }
                Err(Refusal::NotIp) => {
                    self.not_ip += 1;
                    self.two_outputs.then_some(1)
                }
                Err(Refusal::Truncated) => {
                    self.truncated += 1;
                    None
                }
                Err(Refusal::Full) => {
                    self.refused += 1;
                    None
                }
            };
        }
        v
    }

    /// The `map` handler: `text`'s address anonymized.
    fn map(&self, text: &str) -> Result<String, String> {
        let a: Ipv4Addr = text
            .trim()
            .parse()
            .map_err(|_| format!("map takes an IPv4 address, found `{}`", text.trim()))?;
        let mut g = self.sh.tree();
        let tree = g.as_mut().ok_or("no address tree")?;
        tree.anonymize(u32::from(a), &mut rand32)
            .map(|o| Ipv4Addr::from(o).to_string())
            .ok_or_else(|| format!("{a}: the address tree is full (CAPACITY)"))
    }
}

impl Element for AnonymizeIPAddr {
    fn start(&mut self, _cx: &mut Context<'_>) {
        drop(self.sh.tree());
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let v = self.verdicts(batch);
        cx.push_classified_by(batch, &v, |_, v| v.map(usize::from));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(0, &mut b, max);
        if b.is_empty() {
            return;
        }
        let v = self.verdicts(&mut b);
        for (p, &v) in b.drain().zip(v.iter()) {
            match v {
                Some(0) => {
                    let _ = out.push(p);
                }
                Some(port) => cx.push_one(usize::from(port), p),
                None => drop(p),
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("anonymized", self.anonymized);
        s.counter("not_ip", self.not_ip);
        s.counter("truncated", self.truncated);
        s.counter("refused", self.refused);
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("map"), Handler::r("addresses")];
        H
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "addresses" => Some(
                self.sh
                    .tree()
                    .as_ref()
                    .map_or(0, Tree::addresses)
                    .to_string(),
            ),
            _ => None,
        }
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        _cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        (handler == "map" && !write).then(|| self.map(value))
    }
}

#[cfg(test)]
mod tests {
    //! Expected values come from Click's own code: `find_node`,
    //! `make_peer`, `make_output` and `initialize` of anonipaddr.cc and
    //! `click_random(low, high)` of lib/glue.cc, copied verbatim into a
    //! small C++ program built with g++ and run against glibc's
    //! `srandom`/`random()` (Click's user-level stream). It printed each
    //! mapping and the `rand32()` draws it took; the draws are replayed
    //! here so that the tests do not share bricks' global stream with
    //! other tests running at the same time.
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;
    use bricks_wire::checksum;
    use std::collections::VecDeque;

    /// `rand32()` after `srandom(1)`: (random() << 17) ^ (random() >> 14)
    /// of glibc's 1804289383, 846930886 gives 0x8acec9ec, and so on.
    const SEED1_DRAWS: [u32; 9] = [
        0x8ace_c9ec,
        0x30d3_98cd,
        0xb8a2_6525,
        0x2895_8955,
        0x3e53_1ba1,
        0xb175_41fb,
        0x83e5_06dc,
        0x53c7_d517,
        0x00f9_6f41,
    ];

    /// Replays `draws`, failing the test if more are asked for.
    struct Draws(VecDeque<u32>);

    impl Draws {
        fn new(d: &[u32]) -> Draws {
            Draws(d.iter().copied().collect())
        }

        fn next(&mut self) -> u32 {
            self.0.pop_front().expect("Click drew no more here")
        }
    }

    fn config(class: i64, p8: &[u8], capacity: usize) -> Config {
        Config {
            preserve_class: class,
            preserve_8: p8.to_vec(),
            capacity,
        }
    }

    fn ip(s: &str) -> u32 {
        u32::from(s.parse::<Ipv4Addr>().unwrap())
    }

    /// Maps each `(input, output, draws taken)` in order and checks that
    /// the draws are taken as Click takes them.
    fn check(tree: &mut Tree, d: &mut Draws, cases: &[(&str, &str, usize)]) {
        for &(input, output, n) in cases {
            let before = d.0.len();
            let got = tree.anonymize(ip(input), &mut || d.next()).unwrap();
            assert_eq!(Ipv4Addr::from(got).to_string(), output, "{input}");
            assert_eq!(before - d.0.len(), n, "draws for {input}");
        }
    }

    #[test]
    fn default_mapping_is_clicks() {
        // By hand for the first address: the root is input 1, output
        // 0x8acec9ec. 10.0.0.1 ^ 1 = 0x0a000000, whose first set bit is
        // bit 5 from the top: swivel 5, and bit 5 of 10.0.0.1 is 1, so
        // the new node is the right child. Its output keeps the root's
        // top 4 bits (1000), flips bit 5 (1 -> 0), and takes the next
        // draw 0x30d398cd & 0x7fffffff >> 5 = 0x01869cc6 below:
        // 0x80000000 | 0x01869cc6 = 129.134.156.198.
        let mut d = Draws::new(&SEED1_DRAWS);
        let mut t = Tree::new(&config(0, &[], 1 << 20), &mut || d.next()).unwrap();
        check(
            &mut t,
            &mut d,
            &[
                ("10.0.0.1", "129.134.156.198", 1),
                ("10.0.0.2", "129.134.156.196", 1),
                ("192.168.1.1", "20.74.196.170", 1),
                ("10.0.0.1", "129.134.156.198", 0),
                ("0.0.0.0", "0.0.0.0", 0),
                ("255.255.255.255", "255.255.255.255", 0),
                ("10.0.1.1", "129.134.157.62", 1),
                ("11.0.0.1", "128.49.117.65", 1),
                // Differs from 10.0.0.2 in the last bit only: no draw.
                ("10.0.0.3", "129.134.156.197", 0),
                ("1.0.0.0", "139.3.229.6", 1),
                // The root's first input, copied down the tree.
                ("0.0.0.1", "138.206.201.236", 0),
            ],
        );
        assert_eq!(t.addresses(), 8);
        assert!(d.0.len() == 2);
    }

    #[test]
    fn class_and_preserve_8_are_clicks() {
        // CLASS 4, PRESERVE_8 "18 10", seed 1: the root takes 1111 at the
        // top; nets 18 and 10 are looked up, then their top 8 bits set.
        let mut d = Draws::new(&SEED1_DRAWS);
        let mut t = Tree::new(&config(4, &[18, 10], 1 << 20), &mut || d.next()).unwrap();
        assert_eq!(d.0.len(), 6);
        check(
            &mut t,
            &mut d,
            &[
                ("18.26.4.44", "18.114.137.88", 1),
                ("10.0.0.1", "10.138.38.83", 0),
                ("224.0.0.1", "227.229.49.186", 1),
                ("19.1.2.3", "19.49.117.65", 1),
                ("16.0.0.1", "16.7.202.13", 1),
                ("17.0.0.1", "17.83.199.213", 1),
                ("128.1.1.1", "128.62.91.208", 1),
                ("240.0.0.1", "250.206.201.237", 0),
            ],
        );
        // Seed 7, PRESERVE_8 18: nets 16 and 17 swap, 18 and 19 stay.
        let mut d = Draws::new(&[0xbfeb_bc67, 0x0e76_6dee, 0x34db_0796, 0x76f4_1059]);
        let mut t = Tree::new(&config(0, &[18], 1 << 20), &mut || d.next()).unwrap();
        check(
            &mut t,
            &mut d,
            &[
                ("18.0.0.0", "18.235.188.103", 0),
                ("18.26.4.44", "18.240.231.102", 1),
                ("19.0.0.1", "19.52.219.7", 1),
                ("17.1.1.1", "16.237.232.32", 1),
            ],
        );
    }

    #[test]
    fn click_corner_cases() {
        // CLASS 32: Click's `0xFFFFFFFF >> 32` is a shift by 0 on x86, so
        // nothing is preserved and the root's input is 0.0.0.0, which
        // then maps to the root's output.
        let mut d = Draws::new(&[0x9c74_7331, 0xa9b0_e34b, 0x76a2_4a20]);
        let mut t = Tree::new(&config(32, &[], 1 << 20), &mut || d.next()).unwrap();
        check(
            &mut t,
            &mut d,
            &[
                ("0.0.0.0", "156.116.115.49", 0),
                ("1.2.3.4", "157.41.176.227", 1),
                ("255.255.255.254", "59.81.37.16", 1),
                ("255.255.255.255", "255.255.255.255", 0),
            ],
        );
        // PRESERVE_8 "0 255": net 0 at the root makes 0.0.0.0 its input.
        let mut d = Draws::new(&[0x9c74_7331, 0xa9b0_e34b, 0x76a2_4a20]);
        let mut t = Tree::new(&config(0, &[0, 255], 1 << 20), &mut || d.next()).unwrap();
        check(
            &mut t,
            &mut d,
            &[
                ("0.0.0.0", "0.116.115.49", 0),
                ("0.0.0.7", "0.116.115.53", 1),
                ("255.0.0.1", "255.216.113.164", 0),
                ("255.255.255.255", "255.255.255.255", 0),
            ],
        );
    }

    /// A small xorshift, for trees whose exact outputs do not matter.
    fn xorshift(mut s: u32) -> impl FnMut() -> u32 {
        move || {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s
        }
    }

    #[test]
    fn prefixes_are_preserved() {
        let mut r = xorshift(0x1234_5678);
        let mut t = Tree::new(&config(3, &[18], 1 << 20), &mut r).unwrap();
        let mut addrs = xorshift(99);
        let ins: Vec<u32> = (0..2000)
            .map(|i| {
                let a = addrs();
                // Clusters of near addresses as well as scattered ones.
                if i % 2 == 0 {
                    a
                } else {
                    0x0a00_0000 | (a & 0xffff)
                }
            })
            .collect();
        let outs: Vec<u32> = ins
            .iter()
            .map(|&a| t.anonymize(a, &mut r).unwrap())
            .collect();
        for i in 0..ins.len() {
            // The same input always maps to the same output.
            assert_eq!(t.anonymize(ins[i], &mut r), Some(outs[i]));
            let j = (i * 7 + 3) % ins.len();
            if ins[i] != ins[j] && ![0, u32::MAX].contains(&ins[i]) {
                assert_eq!(
                    (ins[i] ^ ins[j]).leading_zeros(),
                    (outs[i] ^ outs[j]).leading_zeros(),
                    "{:#x} {:#x}",
                    ins[i],
                    ins[j]
                );
            }
            // CLASS 3: the leading ones up to 3 are kept.
            assert_eq!(
                (!ins[i]).leading_zeros().min(3),
                (!outs[i]).leading_zeros().min(3)
            );
            assert_eq!(ins[i] >> 24 == 18, outs[i] >> 24 == 18);
        }
    }

    #[test]
    fn the_tree_is_bounded() {
        let mut r = xorshift(7);
        let mut t = Tree::new(&config(0, &[], 3), &mut r).unwrap();
        assert!(t.anonymize(ip("1.1.1.1"), &mut r).is_some());
        assert!(t.anonymize(ip("2.2.2.2"), &mut r).is_some());
        assert_eq!(t.anonymize(ip("3.3.3.3"), &mut r), None);
        // Known and special addresses still map.
        assert!(t.anonymize(ip("1.1.1.1"), &mut r).is_some());
        assert_eq!(t.anonymize(0, &mut r), Some(0));
        assert_eq!(t.addresses(), 3);
        assert_eq!(t.nodes, 5);
        // More nodes than a chunk.
        let mut t = Tree::new(&config(0, &[], 10_000), &mut r).unwrap();
        let mut a = xorshift(5);
        for _ in 0..20_000 {
            let _ = t.anonymize(a(), &mut r);
        }
        assert_eq!(t.addresses(), 10_000);
        assert_eq!(t.nodes, 2 * 10_000 - 1);
    }

    /// TCP 10.0.0.1:1234 -> 10.0.0.2:80, PSH|ACK, 4 bytes of payload;
    /// IP and TCP checksums valid.
    const TCP_DATA: [u8; 44] = [
        0x45, 0x00, 0x00, 0x2c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0x66, 0xc9, 10, 0, 0, 1, 10, 0,
        0, 2, // IP
        0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x18, 0x20, 0x00, 0xd9, 0x03, 0x00,
        0x00, // TCP
        0xde, 0xad, 0xbe, 0xef,
    ];

    /// ICMP port unreachable 10.0.0.2 -> 10.0.0.1 quoting the IP and UDP
    /// headers of a datagram 10.0.0.1:1234 -> 10.0.0.2:53; checksums
    /// valid.
    const ICMP_UNREACH: [u8; 56] = [
        0x45, 0x00, 0x00, 0x38, 0x00, 0x07, 0x00, 0x00, 0x40, 0x01, 0x66, 0xbc, 10, 0, 0, 2, 10, 0,
        0, 1, // IP
        0x03, 0x03, 0xae, 0xba, 0, 0, 0, 0, // ICMP
        0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xca, 10, 0, 0, 1, 10, 0,
        0, 2, // quoted IP
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x0c, 0x49, 0x2f, // quoted UDP
    ];

    /// Whether the ones' complement sum of `b` with its checksum in place
    /// is all ones.
    fn sums_right(b: &[u8]) -> bool {
        checksum::data(b) == 0xffff
    }

    fn tcp_sums_right(p: &[u8]) -> bool {
        let pseudo = checksum::pseudo_header_v4(
            Ipv4Addr::new(p[12], p[13], p[14], p[15]),
            Ipv4Addr::new(p[16], p[17], p[18], p[19]),
            bricks_wire::IpProtocol::TCP,
            (p.len() - 20) as u16,
        );
        checksum::combine(&[pseudo, checksum::data(&p[20..])]) == 0xffff
    }

    #[test]
    fn test_packets_are_valid() {
        assert!(sums_right(&TCP_DATA[..20]) && tcp_sums_right(&TCP_DATA));
        assert!(sums_right(&ICMP_UNREACH[..20]) && sums_right(&ICMP_UNREACH[20..]));
        assert!(sums_right(&ICMP_UNREACH[28..48]));
    }

    fn marked(b: &[u8]) -> Packet {
        let mut p = Packet::from_slice(b).unwrap();
        p.set_network_header(0);
        p
    }

    #[test]
    fn packets_are_rewritten_as_clicks() {
        // Seed 1, as `RandomSeed(1)`: 10.0.0.1 -> 129.134.156.198 and
        // 10.0.0.2 -> 129.134.156.196 (see `default_mapping_is_clicks`).
        let mut d = Draws::new(&SEED1_DRAWS[..3]);
        let mut t = Tree::new(&config(0, &[], 1 << 20), &mut || d.next()).unwrap();
        let mut p = marked(&TCP_DATA);
        anonymize(&mut t, &mut p, &mut || d.next()).unwrap();
        let mut want = TCP_DATA;
        want[12..16].copy_from_slice(&[129, 134, 156, 198]);
        want[16..20].copy_from_slice(&[129, 134, 156, 196]);
        // Click's incremental update gives what a full sum gives.
        want[10..12].copy_from_slice(&[0x00, 0x00]);
        let sum = !checksum::data(&want[..20]);
        want[10..12].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(p.data(), &want[..]);
        assert!(sums_right(&p.data()[..20]));
        // The TCP checksum is left as Click leaves it: no longer right.
        assert_eq!(p.data()[36..38], TCP_DATA[36..38]);
        assert!(!tcp_sums_right(p.data()));

        // The ICMP error: outer and quoted addresses, ICMP checksum.
        let mut p = marked(&ICMP_UNREACH);
        anonymize(&mut t, &mut p, &mut || d.next()).unwrap();
        let out = p.data();
        assert_eq!(out[12..20], [129, 134, 156, 196, 129, 134, 156, 198]);
        assert_eq!(out[40..48], [129, 134, 156, 198, 129, 134, 156, 196]);
        assert!(sums_right(&out[..20]));
        assert!(sums_right(&out[20..]));
        // The quoted header's checksum is left as it was (as Click).
        assert_eq!(out[38..40], ICMP_UNREACH[38..40]);
        assert_eq!(out[20..22], ICMP_UNREACH[20..22]);
        assert!(d.0.is_empty());
    }

    #[test]
    fn element_maps_consistently_and_handlers_tell_the_map() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_packets(0, [marked(&TCP_DATA), marked(&ICMP_UNREACH)]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 2);
        let a1 = h.read_handler_with("map", "10.0.0.1").unwrap();
        let a2 = h.read_handler_with("map", "10.0.0.2").unwrap();
        let addr = |b: &[u8]| Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string();
        assert_eq!(
            (addr(&out[0][12..]), addr(&out[0][16..])),
            (a1.clone(), a2.clone())
        );
        assert_eq!(
            (addr(&out[1][12..]), addr(&out[1][16..])),
            (a2.clone(), a1.clone())
        );
        assert_eq!((addr(&out[1][40..]), addr(&out[1][44..])), (a1, a2));
        for p in &out {
            assert!(sums_right(&p[..20]));
        }
        assert!(sums_right(&out[1][20..]));
        assert_eq!(h.read_handler("addresses").unwrap(), "3");
        assert_eq!(h.read_handler_with("map", "0.0.0.0").unwrap(), "0.0.0.0");
        assert!(h.read_handler_with("map", "10.0.0").is_err());
        assert_eq!(h.stats().get("anonymized"), Some(2));
    }

    #[test]
    fn non_ip_short_and_refused_packets() {
        let mut ip6 = [0u8; 40];
        ip6[0] = 0x60;
        let unmarked = Packet::from_slice(&TCP_DATA).unwrap();
        let mut h = Harness::push(&CLASS, "CAPACITY 3", 1, 2);
        h.push_packets(
            0,
            [
                marked(&ip6),
                unmarked,
                marked(&[]),
                marked(&TCP_DATA[..19]),
                marked(&TCP_DATA),
            ],
        );
        assert_eq!(h.take(0).len(), 1);
        let out1 = h.take_bytes(1);
        assert_eq!(out1.len(), 3);
        assert_eq!(out1[1], TCP_DATA);
        assert_eq!(h.stats().get("not_ip"), Some(3));
        assert_eq!(h.stats().get("truncated"), Some(1));
        // The tree is full (the root, 10.0.0.1, 10.0.0.2): a new address
        // drops the packet, and nothing of it is changed.
        let mut other = TCP_DATA;
        other[19] = 9;
        h.push_packets(0, [marked(&other), marked(&TCP_DATA)]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("refused"), Some(1));
        assert!(h.read_handler_with("map", "10.0.0.9").is_err());
        // Without output 1, packets that are not IP are dropped.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [marked(&ip6)]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("not_ip"), Some(1));
    }

    #[test]
    fn hostile_packets_never_panic() {
        let mut h = Harness::push(&CLASS, "CLASS 2", 1, 2);
        let mut ps = Vec::new();
        for n in 0..=ICMP_UNREACH.len() {
            ps.push(marked(&ICMP_UNREACH[..n]));
            let mut p = ICMP_UNREACH;
            // Outer header lengths 0 to 60, quoted ones too.
            p[0] = 0x40 | (n as u8 & 0x0f);
            p[28] = 0x40 | ((n as u8 >> 2) & 0x0f);
            ps.push(marked(&p[..n]));
            // Every ICMP type.
            let mut q = ICMP_UNREACH;
            q[20] = n as u8;
            ps.push(marked(&q));
        }
        h.push_packets(0, ps);
        let total = h.take(0).len() + h.take(1).len();
        let s = h.stats();
        assert_eq!(
            total as u64 + s.get("truncated").unwrap(),
            3 * (ICMP_UNREACH.len() as u64 + 1)
        );
    }

    #[test]
    fn quoted_headers_need_their_whole_length() {
        // Cut inside the quoted UDP header: the quoted addresses stay.
        let mut d = Draws::new(&SEED1_DRAWS[..3]);
        let mut t = Tree::new(&config(0, &[], 1 << 20), &mut || d.next()).unwrap();
        let mut p = marked(&ICMP_UNREACH[..55]);
        anonymize(&mut t, &mut p, &mut || d.next()).unwrap();
        assert_eq!(p.data()[40..48], ICMP_UNREACH[40..48]);
        assert_eq!(p.data()[20..28], ICMP_UNREACH[20..28]);
        // Echo replies quote nothing.
        let mut echo = ICMP_UNREACH;
        echo[20] = 0;
        let mut p = marked(&echo);
        anonymize(&mut t, &mut p, &mut || d.next()).unwrap();
        assert_eq!(p.data()[20..], echo[20..]);
    }

    #[test]
    fn pull_returns_anonymized_packets_and_pushes_the_rest() {
        let mut h = Harness::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull, Processing::Push],
            },
        );
        h.start();
        assert_eq!(h.read_handler("addresses").unwrap(), "1");
        let mut ip6 = [0u8; 40];
        ip6[0] = 0x60;
        h.feed(
            0,
            [marked(&TCP_DATA), marked(&ip6), marked(&TCP_DATA[..12])],
        );
        let got = h.pull(0, 8);
        assert_eq!(got.len(), 1);
        assert!(sums_right(&got[0].data()[..20]));
        assert_ne!(got[0].data()[12..20], TCP_DATA[12..20]);
        assert_eq!(h.take_bytes(1), vec![ip6.to_vec()]);
        assert_eq!(h.stats().get("truncated"), Some(1));
    }

    #[test]
    fn bad_arguments_are_refused() {
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        let err = |a: &str| Harness::try_new(&CLASS, a, push.clone()).err();
        assert!(err("CLASS 33").unwrap().contains("between 0 and 32"));
        assert!(err("CLASS 99").is_none());
        assert!(err("CLASS -1").is_none());
        assert!(err("PRESERVE_8 18 256")
            .unwrap()
            .contains("between 0 and 255"));
        assert!(err("PRESERVE_8 x").is_some());
        assert!(err("PRESERVE_8 18 19, SEED false").is_none());
        assert!(err("SEED 5").is_some());
        assert!(err("CAPACITY 0").is_some());
        assert!(err("CAPACITY 2, PRESERVE_8 1 2").is_some());
        assert!(err("BOGUS 1").is_some());
    }
}
