//! A multistage router in words, for `bricks multistage check`.

use crate::file::port_name;
use crate::model::{router_mac, Mode, Multistage, Policy};
use crate::units::{format_duration, format_mac};
use std::fmt::Write as _;

/// Front ports a router's MAC list spells out one by one; beyond, it is
/// written as a pattern.
const LISTED_MACS: usize = 8;

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl Multistage {
    /// A summary for people: the stages and the switch, the mode, policy
    /// and probe timing, the front ports with G_k and F_k, each balancer's
    /// ports and back MACs, each router's MACs, and the routes.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let (b, r, f) = (self.balancers.len(), self.routers.len(), self.front_count());
        let _ = writeln!(
            s,
            "multistage router {}: {b} balancer{}, {r} router{}, {f} front port{}, switch {}",
            self.name,
            plural(b),
            plural(r),
            plural(f),
            self.switch
        );
        match self.mode {
            Mode::Dtx => {
                let _ = writeln!(
                    s,
                    "mode dtx (Direct Transmission): a balancer rewrites the destination MAC \
                     of each frame as it arrives and sends it out of a back port"
                );
            }
            Mode::Odb => {
                let _ = writeln!(
                    s,
                    "mode odb (Output Driver Balancing): a balancer checks each IPv4 packet \
                     and looks it up first, then rewrites its destination MAC on the way out"
                );
            }
        }
        for bal in self.balancers.iter().filter(|b| b.backs.len() > 1) {
            let _ = writeln!(
                s,
                "  {} has {} back ports (DTX-{}): a second round robin spreads frames over them",
                bal.name,
                bal.backs.len(),
                bal.backs.len()
            );
        }
        let policy = match self.policy {
            Policy::RoundRobin => "per-packet round robin over the live routers".to_string(),
            Policy::Flow => {
                "a hash of the 5-tuple picks a live router: a flow keeps its router".to_string()
            }
            Policy::Flowlet => format!(
                "a flow keeps its router while its packets come within {}; a new flowlet \
                 takes the next live router",
                format_duration(self.delta)
            ),
        };
        let _ = writeln!(s, "policy {}: {policy}", self.policy.word());
        let _ = writeln!(
            s,
            "probes every {} from every balancer to every router; a router is out of the \
             balancing set after {} missed ({}) and back when heard again",
            format_duration(self.probe_interval),
            self.probe_misses,
            format_duration(self.router_timeout())
        );

        let _ = writeln!(
            s,
            "\nfront ports (the outside sees one router with these interfaces):"
        );
        let names: Vec<String> = self
            .fronts()
            .map(|(b, p)| port_name(&self.balancers[b], p))
            .collect();
        let addresses: Vec<String> = self
            .fronts()
            .map(|(_, p)| format!("{}/{}", p.address, p.prefix_len))
            .collect();
        let nw = names.iter().map(String::len).max().unwrap_or(0).max(4);
        let aw = addresses.iter().map(String::len).max().unwrap_or(0).max(3);
        let kw = (f.saturating_sub(1)).to_string().len().max(1);
        let _ = writeln!(s, "  {:>kw$}  {:nw$}  {:aw$}  F_k", "k", "port", "G_k");
        for ((_, p), (name, address)) in self.fronts().zip(names.iter().zip(&addresses)) {
            let mac = match &p.mac {
                Some(m) => format_mac(m),
                None => format!("the interface's MAC (-D MAC{}=...)", p.index),
            };
            let _ = writeln!(s, "  {:>kw$}  {name:nw$}  {address:aw$}  {mac}", p.index);
        }

        let _ = writeln!(s, "\nbalancers:");
        for (i, bal) in self.balancers.iter().enumerate() {
            let fronts: Vec<String> = bal
                .fronts
                .iter()
                .map(|p| format!("{} ({})", p.index, p.iface))
                .collect();
            let _ = writeln!(
                s,
                "  {} (balancer {i}): front port{} {}",
                bal.name,
                plural(fronts.len()),
                fronts.join(", ")
            );
            for (j, back) in bal.backs.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "    back port {j}: {} {}{}",
                    back.iface,
                    format_mac(&self.back_port_mac(i, j)),
                    if back.mac.is_some() { "" } else { " (derived)" }
                );
            }
        }

        let _ = writeln!(s, "\nrouters (each answers for every front port):");
        for (i, router) in self.routers.iter().enumerate() {
            let _ = writeln!(
                s,
                "  {} (router {i}): back NIC {}, {}",
                router.name,
                router.iface,
                router.lookup.class()
            );
            if f <= LISTED_MACS {
                let macs: Vec<String> = (0..f)
                    .map(|k| {
                        format!(
                            "{} (front port {k})",
                            format_mac(&router_mac(i as u8, k as u8))
                        )
                    })
                    .collect();
                let _ = writeln!(s, "    MACs: {}", macs.join(", "));
            } else {
                let _ = writeln!(
                    s,
                    "    MACs: 02:4d:53:{i:02x}:KK:00 for front port KK = 00 to {:02x}",
                    f - 1
                );
            }
        }

        let _ = writeln!(
            s,
            "\nroutes (every router's, besides the front subnets it is on):"
        );
        if self.routes.is_empty() {
            let _ = writeln!(s, "  none: only the front subnets are reachable");
        }
        let prefixes: Vec<String> = self
            .routes
            .iter()
            .map(|r| format!("{}/{}", r.prefix, r.len))
            .collect();
        let pw = prefixes.iter().map(String::len).max().unwrap_or(0);
        for (route, prefix) in self.routes.iter().zip(&prefixes) {
            let (b, p) = self.front(route.port).expect("routes name front ports");
            let via = match route.gateway {
                Some(g) => format!("via {g}"),
                None => "straight to the destination".to_string(),
            };
            let _ = writeln!(
                s,
                "  {prefix:pw$}  front port {} ({}) {via}",
                route.port,
                port_name(&self.balancers[b], p)
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use crate::Multistage;
    use std::path::Path;

    fn example(name: &str) -> Multistage {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../conf/multistage")
            .join(name);
        Multistage::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn the_2x2_example_is_described_with_its_macs() {
        let d = example("2x2.toml").describe();
        assert!(
            d.starts_with(
                "multistage router 2x2: 2 balancers, 2 routers, 4 front ports, switch sw\n"
            ),
            "{d}"
        );
        assert!(d.contains("mode dtx (Direct Transmission)"), "{d}");
        assert!(d.contains("policy rr: per-packet round robin"), "{d}");
        assert!(d.contains("after 3 missed (150 ms)"), "{d}");
        assert!(
            d.contains("  0  lb1:ext0  10.0.0.1/24  the interface's MAC (-D MAC0=...)"),
            "{d}"
        );
        assert!(
            d.contains("    back port 0: back0 02:4d:42:01:00:00 (derived)"),
            "{d}"
        );
        assert!(
            d.contains(
                "    MACs: 02:4d:53:01:00:00 (front port 0), 02:4d:53:01:01:00 (front port 1), \
                 02:4d:53:01:02:00 (front port 2), 02:4d:53:01:03:00 (front port 3)"
            ),
            "{d}"
        );
        assert!(d.contains("front port 3 (lb2:ext1) via 10.3.0.254"), "{d}");
    }

    #[test]
    fn dtx_n_is_named() {
        let d = example("dtx3.toml").describe();
        assert!(
            d.contains(
                "lb1 has 3 back ports (DTX-3): a second round robin spreads frames over them"
            ),
            "{d}"
        );
    }
}
