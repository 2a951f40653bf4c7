//! `SourceIPHashMapper`: a mapper element that gives each new flow the
//! pattern its source address hashes to, by consistent hashing (Click's
//! `elements/ip/siphmapper.cc`): a load balancer in front of servers keeps
//! every client on one server, and adding or removing a server moves only
//! the clients of the ring's arcs that change.
//!
//! The ring is Click's, point for point: NNODES points a server, drawn
//! from Click's random stream seeded with SEED, kept in Click's static
//! balanced tree and searched as Click searches it, so that a client goes
//! to the same server in bricks as in Click.

use super::iprwpatterns::{self, PatternSet};
use super::pattern::{Mapper, Pattern};
use super::rripmapper::MAX_CHOICES;
use bricks_element::{click_random, ArgError, Args, Element, ElementClass, Manual, PortInfo};
use std::sync::Arc;

/// The `SourceIPHashMapper` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SourceIPHashMapper",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Most points on the ring, drawn ones included (servers up to the
/// largest ID, NNODES each): a bound on the memory and the time a
/// configuration takes.
pub const MAX_POINTS: usize = 1 << 22;

static MANUAL: Manual = Manual {
    summary: "gives a rewriter's new flows the pattern their source address hashes to",
    synopsis: "SourceIPHashMapper(NNODES SEED, PATTERN1 FOUTPUT1 ROUTPUT1 ID1, ...)",
    description: "An information element (no ports) that a rewriter's input spec names \
        (Click's IPMapper), like RoundRobinIPMapper, but each new flow is rewritten by the \
        pattern its source address picks, so that every flow of one client goes to one \
        server (a load balancer's stickiness). The pick is consistent hashing: each server \
        ID owns NNODES points on a ring of 2^31 drawn from Click's random stream seeded with \
        SEED (the stream is reseeded, as in Click), and an address goes to the first point \
        at or after its hash; removing a server moves only its own clients. A flow whose \
        pattern has no free port or address is dropped (no other pattern is tried, as in \
        Click). A PATTERN is as in IPRewriter's `pattern` input spec, or the name of an \
        IPRewriterPatterns pattern; ID is a number from 0 to 65535. As in Click, the servers \
        are ranked by ID and the rank picks the pattern in the order given, so give IDs in \
        increasing order. At most 4096 patterns and 4,194,304 ring points ((largest ID + 1) \
        * NNODES).",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "m :: SourceIPHashMapper(100 7, - - 10.0.0.1 - 0 1 0, - - 10.0.0.2 - 0 1 1);\n\
        InfiniteSource(DATA \\<68 69>, LIMIT 1) -> UDPIPEncap(1.0.0.1, 1234, 10.0.0.100, 80)\n\
        -> rw :: IPRewriter(m, drop) -> Discard;\n\
        Idle -> [1]rw[1] -> Discard;",
    see_also: &["IPRewriter", "RoundRobinIPMapper", "IPRewriterPatterns"],
};

#[derive(Debug)]
struct SourceIPHashMapper;

impl Element for SourceIPHashMapper {}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rest = args.rest();
    let Some(((first, _), specs)) = rest.split_first() else {
        return Err(ArgError::new("no hash seed given"));
    };
    if specs.is_empty() {
        return Err(ArgError::new("no patterns given"));
    }
    if specs.len() > MAX_CHOICES {
        return Err(ArgError::new(format!("more than {MAX_CHOICES} patterns")));
    }
    let (nodes, seed) = parse_params(first).map_err(ArgError::new)?;
    let mut ids = Vec::with_capacity(specs.len());
    let mut texts = Vec::with_capacity(specs.len());
    for (i, (text, span)) in specs.iter().enumerate() {
        let (pattern, id) = split_id(text).ok_or_else(|| {
            ArgError::at(*span, format!("pattern {i}: bad server ID in pattern spec"))
        })?;
        ids.push(id);
        texts.push(pattern);
    }
    let points = (usize::from(*ids.iter().max().unwrap_or(&0)) + 1).saturating_mul(nodes);
    if points > MAX_POINTS {
        return Err(ArgError::new(format!(
            "(largest ID + 1) * NNODES is {points}, more than {MAX_POINTS} ring points"
        )));
    }
    let sets = std::cell::OnceCell::new();
    let named = |name: &str| -> Option<Arc<Pattern>> {
        let sets: &Vec<Arc<PatternSet>> = sets.get_or_init(|| {
            args.shared_in_scope::<PatternSet>(iprwpatterns::CLASS.name)
                .unwrap_or_default()
        });
        sets.iter().find_map(|s| s.get(name))
    };
    let m = Mapper::parse("SourceIPHashMapper", texts.iter().copied(), &named)
        .map_err(ArgError::new)?;
    let ring = Ring::new(&ids, nodes, seed);
    let m = m.with_source_choice(move |saddr| ring.pick(saddr));
    args.shared(|_| Ok(m))?;
    Ok(Box::new(SourceIPHashMapper))
}

/// `NNODES SEED`: points a server and the seed of the stream.
fn parse_params(text: &str) -> Result<(usize, u32), String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [n, seed] = words[..] else {
        return Err("requires 2 config params: numnodes seed".into());
    };
    let nodes = n
        .parse::<i32>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or("number of nodes must be an integer")?;
    let seed = seed
        .parse::<i32>()
        .map_err(|_| "hash seed must be an integer")?;
    Ok((nodes as usize, seed as u32))
}

/// `PATTERN FOUTPUT ROUTPUT ID`: the pattern's text and the ID.
fn split_id(text: &str) -> Option<(&str, u16)> {
    let text = text.trim_end();
    let (rest, id) = text.rsplit_once(char::is_whitespace)?;
    let id: i32 = id.parse().ok()?;
    Some((rest.trim_end(), u16::try_from(id).ok()?))
}

/// One point of the ring: its key, and the rank of its server among the
/// IDs given (Click's `chash_node_t`'s `index`).
#[derive(Debug, Clone, Copy)]
struct Point {
    key: i32,
    rank: u16,
}

/// Click's consistent hash table (`chash_t`): the points in Click's
/// static balanced tree (`jvtree_t`), searched as Click searches it.
#[derive(Debug)]
struct Ring {
    tree: Vec<Point>,
}

impl Ring {
    /// Draws NNODES points for every ID from 0 to the largest (drawn for
    /// absent IDs too, as Click does, so that a server keeps its points
    /// when others come and go).
    fn new(ids: &[u16], nodes: usize, seed: u32) -> Ring {
        let max = ids.iter().copied().max().map_or(0, usize::from) + 1;
        let mut present = vec![false; max];
        for &id in ids {
            present[usize::from(id)] = true;
        }
        let draws = click_random::seeded_draws(seed, max * nodes);
        let mut points = Vec::with_capacity(ids.len() * nodes);
        let mut rank: u16 = u16::MAX;
        for (&here, keys) in present.iter().zip(draws.chunks(nodes)) {
            if here {
                rank = rank.wrapping_add(1);
                points.extend(keys.iter().map(|&k| Point {
                    key: k as i32,
                    rank,
                }));
            }
        }
        Ring {
            tree: jv_tree(points),
        }
    }

    /// The rank of the server `saddr` (host order) goes to: Click's hash of
    /// the address as its bytes read on a little-endian machine.
    fn pick(&self, saddr: u32) -> usize {
        let mut h = saddr.swap_bytes();
        let low = h & 0xff;
        h = h.wrapping_mul((low << 24) | 1);
        h %= 0x7fff_ffff;
        usize::from(self.search(h as i32).rank)
    }

    /// The point with key `k`, else the smallest key above `k` on the
    /// search path, else the root: Click's `jvtree_t::search`.
    fn search(&self, k: i32) -> Point {
        let mut i = 0;
        let mut found = None;
        while let Some(p) = self.tree.get(i) {
            if k == p.key {
                return *p;
            }
            if k > p.key {
                i = 2 * i + 2;
            } else {
                found = Some(*p);
                i = 2 * i + 1;
            }
        }
        found.unwrap_or(self.tree[0])
    }
}

/// Click's `jvtree_t` layout: the points sorted by key, then laid out as
/// an implicit binary tree (children of `i` at `2i + 1` and `2i + 2`),
/// level by level.
fn jv_tree(mut arr: Vec<Point>) -> Vec<Point> {
    arr.sort_by_key(|p| p.key);
    let sz = arr.len();
    let n = next2pow(sz);
    let h = n as isize - 1;
    let szi = sz as isize;
    let f = 2 * ((szi + 1) / 2) - 2 * ((h - szi) / 2) + 1;
    let mut tree = Vec::with_capacity(sz);
    let (mut d, mut s) = (n, n >> 1);
    while s > 0 && tree.len() < sz {
        let mut x = s;
        while x < n && tree.len() < sz {
            let xi = x as isize;
            let from = if xi < f { xi } else { (xi + f - 1) / 2 };
            tree.push(arr[(from - 1) as usize]);
            x += d;
        }
        d = s;
        s >>= 1;
    }
    tree
}

/// Click's `next2pow`: the power of two above `i`'s highest bit (2 for 1,
/// 8 for 4 and for 5).
fn next2pow(i: usize) -> usize {
    let bits = usize::BITS - i.leading_zeros();
    1 << bits.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_a_search_tree_of_every_point() {
        for sz in 1..600 {
            let pts: Vec<Point> = (0..sz)
                .map(|k| Point {
                    key: (k * 7 + 3) as i32,
                    rank: 0,
                })
                .collect();
            let tree = jv_tree(pts);
            assert_eq!(tree.len(), sz);
            let mut keys: Vec<i32> = tree.iter().map(|p| p.key).collect();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), sz, "size {sz}: a point twice");
            // Every node's left subtree is smaller and right larger.
            for (i, p) in tree.iter().enumerate() {
                for (c, smaller) in [(2 * i + 1, true), (2 * i + 2, false)] {
                    if let Some(q) = tree.get(c) {
                        assert_eq!(q.key < p.key, smaller, "size {sz} node {i}");
                    }
                }
            }
            // Every key is found.
            let ring = Ring { tree };
            for k in 0..sz {
                assert_eq!(ring.search((k * 7 + 3) as i32).key, (k * 7 + 3) as i32);
            }
        }
    }

    #[test]
    fn search_takes_the_next_point_up() {
        let pts = [10, 20, 30, 40, 50]
            .iter()
            .enumerate()
            .map(|(r, &key)| Point {
                key,
                rank: r as u16,
            })
            .collect();
        let ring = Ring { tree: jv_tree(pts) };
        assert_eq!(ring.search(5).key, 10);
        assert_eq!(ring.search(11).key, 20);
        assert_eq!(ring.search(40).key, 40);
        assert_eq!(ring.search(49).key, 50);
        // Past the last point: Click gives the root, not the first.
        assert_eq!(ring.search(51).key, ring.tree[0].key);
    }

    #[test]
    fn next2pow_is_clicks() {
        assert_eq!(
            [1, 2, 3, 4, 5, 7, 8, 100].map(next2pow),
            [2, 4, 4, 8, 8, 8, 16, 128]
        );
    }

    #[test]
    fn arguments() {
        assert_eq!(parse_params("100 7"), Ok((100, 7)));
        assert_eq!(parse_params("1 -1"), Ok((1, u32::MAX)));
        assert!(parse_params("0 7").is_err());
        assert!(parse_params("100").is_err());
        assert!(parse_params("a 7").is_err());
        assert_eq!(
            split_id("- - 10.0.0.1 - 0 1 3"),
            Some(("- - 10.0.0.1 - 0 1", 3))
        );
        assert_eq!(split_id("- - 10.0.0.1 - 0 1 -3"), None);
        assert_eq!(split_id("- - 10.0.0.1 - 0 1 70000"), None);
        assert_eq!(split_id("3"), None);
    }

    #[test]
    fn one_client_one_server_and_servers_share_clients() {
        let ring = Ring::new(&[0, 1, 2, 3], 100, 7);
        let mut counts = [0usize; 4];
        for c in 0..20_000u32 {
            let a = 0x0a00_0000 | c;
            let r = ring.pick(a);
            assert_eq!(ring.pick(a), r);
            counts[r] += 1;
        }
        // 100 points a server: each gets a share near a quarter.
        for n in counts {
            assert!((2_500..7_500).contains(&n), "{counts:?}");
        }
    }

    /// Click 2.1's choices for `SourceIPHashMapper(50 7, ... 0, ... 1,
    /// ... 2, ... 5)` (each pattern rewrites the destination to 10.0.0.1
    /// to .4), read from the packets its IPRewriter sent.
    #[test]
    fn clients_go_where_click_sends_them() {
        let ring = Ring::new(&[0, 1, 2, 5], 50, 7);
        let click = [
            ("61.66.189.242", 2),
            ("149.33.6.240", 1),
            ("142.119.98.240", 3),
            ("215.243.203.77", 2),
            ("163.77.199.7", 3),
            ("199.32.81.21", 1),
            ("200.15.137.242", 4),
            ("185.198.218.202", 2),
            ("206.227.68.187", 1),
            ("10.69.253.111", 1),
            ("173.223.154.215", 2),
            ("214.197.179.208", 3),
        ];
        for (src, server) in click {
            let a: std::net::Ipv4Addr = src.parse().unwrap();
            assert_eq!(ring.pick(u32::from(a)) + 1, server, "{src}");
        }
    }

    #[test]
    fn removing_a_server_moves_only_its_clients() {
        let all = Ring::new(&[0, 1, 2], 100, 7);
        // Server 2 gone: IDs 0 and 1 keep their points (drawn first).
        let fewer = Ring::new(&[0, 1], 100, 7);
        for c in 0..5_000u32 {
            let a = 0xc0a8_0000 | c;
            let before = all.pick(a);
            if before != 2 {
                assert_eq!(fewer.pick(a), before, "client {a:#x}");
            }
        }
    }
}
