//! A cluster in words, for `bricks cluster check`.

use crate::file::topology_text;
use crate::model::{Cluster, Role, Topology};
use crate::units::{format_duration, format_mac, format_rate};
use std::fmt::Write as _;

impl Cluster {
    /// A summary for people: the cluster's rates and knobs, each node with
    /// its role, ports and links, the links, the routes, and R/N, the
    /// share of its traffic to one output node an input node sends
    /// directly under Direct VLB (RouteBricks §3.2).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let io = self.io_nodes().count();
        let topology = match self.topology {
            Topology::FullMesh => "full mesh".to_string(),
            Topology::Fly { .. } => format!("{} (RouteBricks §3.3)", topology_text(self.topology)),
            Topology::Custom => "custom links".to_string(),
        };
        let _ = writeln!(
            s,
            "cluster {} (id {}): {} node{} ({io} I/O, {} intermediate-only), {topology}, {} \
             internal link{}",
            self.name,
            self.id,
            self.nodes.len(),
            plural(self.nodes.len()),
            self.nodes.len() - io,
            self.links.len(),
            plural(self.links.len()),
        );
        let _ = writeln!(
            s,
            "R = {} per external port, internal links {}",
            format_rate(self.rate_bps),
            format_rate(self.internal_rate_bps)
        );
        let _ = writeln!(
            s,
            "Direct VLB: each input node sends up to R/N = {} straight to each of the N = {io} \
             output nodes and balances the rest through the others; each I/O node processes \
             2R to 3R",
            format_rate(self.direct_share_bps())
        );
        if self.flowlets {
            let _ = writeln!(
                s,
                "flowlets on: a flow's packets closer than {} take the same path",
                format_duration(self.flowlet_delta)
            );
        } else {
            let _ = writeln!(s, "flowlets off: packets are balanced one by one");
        }
        let _ = writeln!(
            s,
            "hellos every {}; a link is down after {} missed",
            format_duration(self.hello_interval),
            self.hello_misses
        );

        let _ = writeln!(s, "\nnodes:");
        let width = self.nodes.iter().map(|n| n.name.len()).max().unwrap_or(0);
        for (i, n) in self.nodes.iter().enumerate() {
            let role = match n.role {
                Role::Io => "I/O",
                Role::Intermediate => "intermediate",
            };
            let _ = writeln!(s, "  {:width$}  {role}", n.name);
            for p in &n.ports {
                let mac = match &p.mac {
                    Some(m) => format_mac(m),
                    None => "MAC of the interface".to_string(),
                };
                let _ = writeln!(
                    s,
                    "  {:width$}    port {} {}/{} ({mac})",
                    "", p.iface, p.address, p.prefix_len
                );
            }
            let ends = self.link_ends(i as u8);
            if !ends.is_empty() {
                let list: Vec<String> = ends
                    .iter()
                    .map(|e| format!("{} to {}", e.iface, self.nodes[usize::from(e.peer)].name))
                    .collect();
                let _ = writeln!(s, "  {:width$}    links: {}", "", list.join(", "));
            }
        }

        if !self.links.is_empty() {
            let _ = writeln!(s, "\nlinks:");
            for (i, l) in self.links.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "  {i:3}  {} {} -- {} {}",
                    self.nodes[usize::from(l.a)].name,
                    l.a_iface,
                    self.nodes[usize::from(l.b)].name,
                    l.b_iface
                );
            }
        }

        let _ = writeln!(s, "\nroutes:");
        if self.routes.is_empty() {
            let _ = writeln!(s, "  none: every packet is answered with ICMP unreachable");
        }
        for r in &self.routes {
            let node = &self.nodes[usize::from(r.node)];
            let port = node
                .ports
                .get(usize::from(r.port))
                .map_or("?", |p| p.iface.as_str());
            let prefix = format!("{}/{}", r.prefix, r.len);
            let how = match r.gateway {
                Some(g) => format!("via {g}"),
                None => "direct".to_string(),
            };
            let _ = writeln!(s, "  {prefix:18} -> {} {port} {how}", node.name);
        }
        s
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use crate::Cluster;
    use std::path::Path;

    fn load(name: &str) -> Cluster {
        Cluster::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../conf/cluster")
                .join(name),
        )
        .unwrap()
    }

    #[test]
    fn rb4() {
        let d = load("rb4.toml").describe();
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(
            lines[0],
            "cluster rb4 (id 1): 4 nodes (4 I/O, 0 intermediate-only), full mesh, 6 internal links"
        );
        assert_eq!(
            lines[1],
            "R = 100 Mbps per external port, internal links 100 Mbps"
        );
        assert!(lines[2].contains("R/N = 25 Mbps straight to each of the N = 4 output nodes"));
        assert_eq!(
            lines[3],
            "flowlets on: a flow's packets closer than 100 ms take the same path"
        );
        assert_eq!(
            lines[4],
            "hellos every 50 ms; a link is down after 3 missed"
        );
        assert!(d.contains("\n  n1  I/O\n        port ext0 10.1.0.1/24 (MAC of the interface)\n        links: vn2 to n2, vn3 to n3, vn4 to n4\n"), "{d}");
        assert!(d.contains("\n    5  n3 vn4 -- n4 vn3\n"), "{d}");
        assert!(
            d.contains("\n  10.4.0.0/24        -> n4 ext0 direct\n"),
            "{d}"
        );
    }

    #[test]
    fn fly() {
        let d = load("fly.toml").describe();
        assert!(d.starts_with(
            "cluster fly (id 1): 9 nodes (3 I/O, 6 intermediate-only), 3-ary 2-fly (RouteBricks §3.3), 15 internal links\n"
        ), "{d}");
        assert!(d.contains("R/N = 333.333 Mbps"), "{d}");
        assert!(d.contains("\n  s10  intermediate\n         links: vn1 to n1, vs20 to s20, vs21 to s21, vs22 to s22\n"), "{d}");
    }
}
