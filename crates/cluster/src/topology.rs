//! How the internal links are laid out and how a node forwards over them.
//!
//! RouteBricks §3.3: while the I/O servers' fanout allows, they form a full
//! mesh (Direct VLB over one hop each way); beyond it, a k-ary n-fly (a
//! generalised butterfly) joins them through extra, intermediate-only
//! servers. The k-ary n-fly here follows Dally and Towles ("Principles and
//! Practices of Interconnection Networks", ch. 4.1): k^n terminals, n
//! stages of k^(n-1) switches. The cluster's I/O nodes are its terminals,
//! attached on both sides (terminal t to stage-1 node t/k and to stage-n
//! node t/k), since a server is both the source and the destination of its
//! ports' traffic; stage i node j connects to the k stage-(i+1) nodes whose
//! number differs from j only in base-k digit i-1 (the butterfly wiring).
//!
//! Packets follow shortest paths ([`Cluster::next_hops`]); Direct VLB
//! balances through any other node ([`Cluster::intermediates`]).

use crate::file::MAX_NODES;
use crate::model::{Cluster, NodeId};
use std::collections::VecDeque;

/// The nodes and links a k-ary n-fly adds to `io` I/O nodes (ids 0..io).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlyLayout {
    /// Stage nodes, stage by stage: `s{stage}{index}`, ids io, io + 1, ...
    pub stage_names: Vec<String>,
    /// k^(n-1).
    pub per_stage: usize,
    /// Links as (a, b) node ids: each I/O node's, then stage 1 to 2, ...
    pub links: Vec<(usize, usize)>,
}

/// Lays out a k-ary n-fly under `io` I/O nodes; refuses one with more
/// I/O nodes than terminals or more nodes than a cluster may have.
pub(crate) fn fly_layout(io: usize, k: u32, n: u32) -> Result<FlyLayout, String> {
    if k < 2 || n < 1 {
        return Err(format!(
            "a {k}-ary {n}-fly: k must be at least 2 and n at least 1"
        ));
    }
    let k64 = u64::from(k);
    let per_stage = k64.checked_pow(n - 1);
    let stage_total = per_stage.and_then(|p| p.checked_mul(u64::from(n)));
    match stage_total {
        Some(t) if t + io as u64 <= MAX_NODES as u64 => {}
        _ => {
            let how_many = match stage_total {
                Some(t) => t.to_string(),
                None => "more than 2^64".to_string(),
            };
            return Err(format!(
                "a {k}-ary {n}-fly adds {how_many} stage nodes ({n} stages of {k}^{}) to the \
                 {io} I/O nodes: more than the {MAX_NODES} nodes a cluster can have",
                n - 1
            ));
        }
    }
    let per_stage = per_stage.expect("checked above") as usize;
    // At most 255 nodes, so k^n = k * per_stage fits easily.
    let terminals = per_stage as u64 * k64;
    if io as u64 > terminals {
        return Err(format!(
            "a {k}-ary {n}-fly has {terminals} terminals: at most {terminals} I/O nodes, the \
             file lists {io}"
        ));
    }
    let n = n as usize;
    let stage = |s: usize, j: usize| io + (s - 1) * per_stage + j;
    let mut stage_names = Vec::with_capacity(n * per_stage);
    for s in 1..=n {
        for j in 0..per_stage {
            stage_names.push(format!("s{s}{j}"));
        }
    }
    let mut links = Vec::new();
    // Spread the I/O nodes over the terminals so that they sit under
    // different stage nodes.
    let spacing = terminals / io.max(1) as u64;
    for i in 0..io {
        let t = i as u64 * spacing;
        let j = (t / k64) as usize;
        links.push((i, stage(1, j)));
        if n > 1 {
            links.push((i, stage(n, j)));
        }
    }
    for s in 1..n {
        // Base-k digit s-1 of a stage node's number.
        let weight = (k as usize).pow(s as u32 - 1);
        for j in 0..per_stage {
            let digit = (j / weight) % k as usize;
            for d in 0..k as usize {
                let peer = j - digit * weight + d * weight;
                links.push((stage(s, j), stage(s + 1, peer)));
            }
        }
    }
    Ok(FlyLayout {
        stage_names,
        per_stage,
        links,
    })
}

impl Cluster {
    /// For each destination node, the index into `self.link_ends(from)` of
    /// the link that starts a shortest path to it (ties go to the lowest
    /// peer id); `None` for `from` itself and for nodes it cannot reach.
    pub fn next_hops(&self, from: NodeId) -> Vec<Option<usize>> {
        self.next_hops_avoiding(from, &|_| false)
    }

    /// [`Cluster::next_hops`] over the links for which `down(link index in
    /// self.links)` is false.
    pub fn next_hops_avoiding(
        &self,
        from: NodeId,
        down: &dyn Fn(usize) -> bool,
    ) -> Vec<Option<usize>> {
        self.bfs(from, down).0
    }

    /// Internal hops from `from` to each node over the links up (0 for
    /// itself, `None` where it cannot reach).
    pub fn hop_counts(&self, from: NodeId, down: &dyn Fn(usize) -> bool) -> Vec<Option<u32>> {
        self.bfs(from, down).1
    }

    /// The nodes Direct VLB may balance a packet from `src` to `dst`
    /// through (phase 1 of VLB, RouteBricks §3.2): every node but the two
    /// ends; in a k-ary n-fly that is the stage nodes and the other I/O
    /// nodes.
    pub fn intermediates(&self, src: NodeId, dst: NodeId) -> Vec<NodeId> {
        (0..self.nodes.len())
            .map(|i| i as NodeId)
            .filter(|&i| i != src && i != dst)
            .collect()
    }

    /// Breadth-first search from `from`: first hops (indices into
    /// `link_ends(from)`) and hop counts. The first level is visited by
    /// increasing peer id, and each level keeps the order of the one
    /// before, so the first node to reach another has the lowest first
    /// peer among its shortest paths.
    fn bfs(
        &self,
        from: NodeId,
        down: &dyn Fn(usize) -> bool,
    ) -> (Vec<Option<usize>>, Vec<Option<u32>>) {
        let n = self.nodes.len();
        let mut first = vec![None; n];
        let mut hops = vec![None; n];
        let from = usize::from(from);
        if from >= n {
            return (first, hops);
        }
        let mut adjacent: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, l) in self.links.iter().enumerate() {
            let (a, b) = (usize::from(l.a), usize::from(l.b));
            if a < n && b < n && !down(i) {
                adjacent[a].push(b);
                adjacent[b].push(a);
            }
        }
        let mut starts: Vec<(usize, usize)> = self
            .link_ends(from as NodeId)
            .iter()
            .enumerate()
            .filter(|(_, e)| usize::from(e.peer) < n && !down(e.link))
            .map(|(i, e)| (usize::from(e.peer), i))
            .collect();
        starts.sort_unstable();
        hops[from] = Some(0);
        let mut queue = VecDeque::new();
        for (peer, end) in starts {
            if hops[peer].is_none() {
                hops[peer] = Some(1);
                first[peer] = Some(end);
                queue.push_back(peer);
            }
        }
        while let Some(x) = queue.pop_front() {
            let h = hops[x].expect("queued nodes have a count") + 1;
            for &y in &adjacent[x] {
                if hops[y].is_none() {
                    hops[y] = Some(h);
                    first[y] = first[x];
                    queue.push_back(y);
                }
            }
        }
        (first, hops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Node, Port, Role, Topology};
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn mesh(n: usize) -> Cluster {
        let text: String = (1..=n)
            .map(|i| {
                format!(
                    "[[node]]\nname = \"n{i}\"\n[[node.port]]\niface = \"ext0\"\naddress = \"10.{i}.0.1/24\"\n"
                )
            })
            .collect();
        Cluster::from_toml(&format!("name = \"m\"\nrate = \"10Gbps\"\n{text}")).unwrap()
    }

    fn fly() -> Cluster {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/cluster/fly.toml");
        Cluster::load(&path).unwrap()
    }

    fn peer_of(c: &Cluster, from: NodeId, hop: Option<usize>) -> Option<String> {
        hop.map(|h| c.nodes[usize::from(c.link_ends(from)[h].peer)].name.clone())
    }

    #[test]
    fn full_mesh_of_four_is_one_hop() {
        let c = mesh(4);
        assert_eq!(c.links.len(), 6);
        for from in 0..4u8 {
            let hops = c.next_hops(from);
            let ends = c.link_ends(from);
            assert_eq!(ends.len(), 3);
            for to in 0..4u8 {
                match hops[usize::from(to)] {
                    None => assert_eq!(from, to),
                    Some(h) => assert_eq!(ends[h].peer, to, "{from} -> {to} goes direct"),
                }
            }
            let counts = c.hop_counts(from, &|_| false);
            assert_eq!(counts.iter().filter(|h| **h == Some(1)).count(), 3);
        }
        assert_eq!(c.intermediates(0, 3), vec![1, 2]);
        assert_eq!(c.intermediates(2, 2), vec![0, 1, 3]);
    }

    #[test]
    fn full_mesh_around_a_link_that_is_down() {
        let c = mesh(4);
        // Link 0 is n1-n2: n1 reaches n2 through n3 (the lowest id left).
        let hops = c.next_hops_avoiding(0, &|l| l == 0);
        assert_eq!(peer_of(&c, 0, hops[1]).as_deref(), Some("n3"));
        assert_eq!(c.hop_counts(0, &|l| l == 0)[1], Some(2));
        assert_eq!(peer_of(&c, 0, hops[2]).as_deref(), Some("n3"));
        assert_eq!(peer_of(&c, 0, hops[3]).as_deref(), Some("n4"));
        // Every link of n1 down: it reaches nobody.
        let ends: Vec<usize> = c.link_ends(0).iter().map(|e| e.link).collect();
        let alone = c.next_hops_avoiding(0, &|l| ends.contains(&l));
        assert!(alone.iter().all(Option::is_none));
        // And others cannot reach it.
        assert_eq!(c.next_hops_avoiding(1, &|l| ends.contains(&l))[0], None);
    }

    #[test]
    fn fly_reaches_every_node() {
        let c = fly();
        let names = |ids: Vec<NodeId>| -> Vec<String> {
            ids.iter()
                .map(|&i| c.nodes[usize::from(i)].name.clone())
                .collect()
        };
        for from in c.io_nodes() {
            let counts = c.hop_counts(from, &|_| false);
            for to in c.io_nodes() {
                // I/O node, stage 1, stage 2, I/O node: 3 hops.
                let want = if from == to { 0 } else { 3 };
                assert_eq!(counts[usize::from(to)], Some(want), "{from} -> {to}");
            }
            assert!(counts.iter().all(Option::is_some), "connected");
        }
        // From n1 (on s10 and s20).
        let hops = c.next_hops(0);
        let counts = c.hop_counts(0, &|_| false);
        let want = [
            ("n1", None, 0),
            ("n2", Some("s10"), 3),
            ("n3", Some("s10"), 3),
            ("s10", Some("s10"), 1),
            ("s11", Some("s20"), 2),
            ("s12", Some("s20"), 2),
            ("s20", Some("s20"), 1),
            ("s21", Some("s10"), 2),
            ("s22", Some("s10"), 2),
        ];
        for (i, (name, via, count)) in want.iter().enumerate() {
            assert_eq!(c.nodes[i].name, *name);
            assert_eq!(peer_of(&c, 0, hops[i]).as_deref(), *via, "n1 -> {name}");
            assert_eq!(counts[i], Some(*count), "n1 -> {name}");
        }
        assert_eq!(
            names(c.intermediates(0, 1)),
            ["n3", "s10", "s11", "s12", "s20", "s21", "s22"]
        );
        // With s10 cut off from n1, n1 reaches n2 through s20.
        let s10_link = c.link_ends(0)[0].link;
        let hops = c.next_hops_avoiding(0, &|l| l == s10_link);
        assert_eq!(peer_of(&c, 0, hops[1]).as_deref(), Some("s20"));
        assert_eq!(c.hop_counts(0, &|l| l == s10_link)[1], Some(3));
    }

    #[test]
    fn fly_layouts() {
        // 2-ary 3-fly with 8 I/O nodes: 3 stages of 4.
        let l = fly_layout(8, 2, 3).unwrap();
        assert_eq!(l.per_stage, 4);
        assert_eq!(
            l.stage_names,
            ["s10", "s11", "s12", "s13", "s20", "s21", "s22", "s23", "s30", "s31", "s32", "s33"]
        );
        // 8 I/O nodes x 2 links + 2 stage gaps x 4 nodes x 2 links.
        assert_eq!(l.links.len(), 16 + 16);
        // Terminal 5 (I/O node 5) sits under stage node 5 / 2 = 2.
        assert_eq!(l.links[10], (5, 8 + 2));
        assert_eq!(l.links[11], (5, 8 + 8 + 2));
        // Stage 1 -> 2 flips digit 0, stage 2 -> 3 flips digit 1.
        let from = |s: usize, j: usize| -> Vec<usize> {
            let id = 8 + (s - 1) * 4 + j;
            l.links
                .iter()
                .filter(|(a, _)| *a == id)
                .map(|(_, b)| b - 8 - s * 4)
                .collect()
        };
        assert_eq!(from(1, 2), [2, 3]);
        assert_eq!(from(2, 1), [1, 3]);
        assert_eq!(from(2, 2), [0, 2]);
        // Two I/O nodes of four terminals: spread to terminals 0 and 2,
        // under different stage nodes.
        let l = fly_layout(2, 2, 2).unwrap();
        assert_eq!(&l.links[..4], &[(0, 2), (0, 4), (1, 3), (1, 5)]);
        assert!(fly_layout(5, 2, 2).unwrap_err().contains("4 terminals"));
        assert!(fly_layout(1, 2, 9)
            .unwrap_err()
            .contains("2304 stage nodes"));
        assert!(fly_layout(1, u32::MAX, 3)
            .unwrap_err()
            .contains("more than"));
    }

    #[test]
    fn every_fly_is_connected() {
        for (k, n) in [
            (2, 1),
            (2, 2),
            (2, 3),
            (2, 4),
            (3, 2),
            (3, 3),
            (4, 2),
            (5, 2),
            (4, 3),
        ] {
            let terminals = (k as usize).pow(n);
            for io in [1, terminals / 2, terminals]
                .into_iter()
                .filter(|&i| i >= 1)
            {
                let Ok(l) = fly_layout(io, k, n) else {
                    continue;
                };
                let c = Cluster {
                    name: "f".into(),
                    id: 1,
                    rate_bps: 1,
                    internal_rate_bps: 1,
                    topology: Topology::Fly { k, n },
                    flowlets: true,
                    flowlet_delta: Duration::from_millis(100),
                    hello_interval: Duration::from_millis(50),
                    hello_misses: 3,
                    directed_broadcast: false,
                    nodes: (0..io)
                        .map(|i| Node {
                            name: format!("n{i}"),
                            role: Role::Io,
                            ports: vec![Port {
                                iface: "e".into(),
                                address: Ipv4Addr::new(10, i as u8, 0, 1),
                                prefix_len: 24,
                                mac: None,
                            }],
                        })
                        .chain(l.stage_names.iter().map(|s| Node {
                            name: s.clone(),
                            role: Role::Intermediate,
                            ports: vec![],
                        }))
                        .collect(),
                    links: l
                        .links
                        .iter()
                        .map(|&(a, b)| crate::model::Link {
                            a: a as u8,
                            a_iface: String::new(),
                            b: b as u8,
                            b_iface: String::new(),
                        })
                        .collect(),
                    routes: vec![],
                };
                let want = n + 1;
                for from in 0..io as u8 {
                    let counts = c.hop_counts(from, &|_| false);
                    assert!(
                        counts.iter().all(Option::is_some),
                        "{k}-ary {n}-fly, {io} I/O"
                    );
                    for (to, count) in counts.iter().enumerate().take(io) {
                        if to != usize::from(from) {
                            // Up one side of the butterfly: I/O, n stages, I/O
                            // at most.
                            assert!(count.unwrap() <= want, "{k}-ary {n}-fly");
                        }
                    }
                }
                // Stage nodes have k links forward and, but for the last
                // stage, k back (stage 1: its terminals).
                for s in 2..n as usize {
                    let id = io + (s - 1) * l.per_stage;
                    assert_eq!(
                        c.link_ends(id as u8).len(),
                        2 * k as usize,
                        "{k}-ary {n}-fly s{s}0"
                    );
                }
            }
        }
    }
}
