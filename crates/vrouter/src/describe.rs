//! The box in words, for `bricks vr check`.

use crate::model::{Broadcast, Demux, Local, Queueing, Scheduler, Tag, VirtualRouters};
use crate::net::format_mac;
use std::fmt::Write as _;

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl VirtualRouters {
    /// A summary for people: the queueing, each link with its demux, its
    /// routers' tags and shares, each router with its route table's
    /// outputs (the numbering a routes file uses) and its routes.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} virtual router{} on {} link{}, queueing {}",
            self.routers.len(),
            plural(self.routers.len()),
            self.links.len(),
            plural(self.links.len()),
            match self.queueing {
                Queueing::Direct => "direct (demultiplexed packets go straight into their router)",
                Queueing::PerRouter =>
                    "per-router (an input queue per router interface, drained by weight)",
            }
        );
        let _ = writeln!(s, "\nlinks:");
        for (l, link) in self.links.iter().enumerate() {
            let mac = match link.mac {
                Some(m) => format!("MAC {}", format_mac(&m)),
                None if link.demux == Demux::Mac => "interface MACs of their own".into(),
                None => format!("MAC from -D MAC_{}", crate::link_element_name(&link.name)),
            };
            let mut extra = String::new();
            if let Some((a, len)) = link.underlay {
                let _ = write!(extra, ", underlay {a}/{len}");
                if let Some(g) = link.gateway {
                    let _ = write!(extra, " via {g}");
                }
            }
            if link.demux == Demux::Mac {
                let b = match link.broadcast {
                    Broadcast::Replicate => "to every router".to_string(),
                    Broadcast::Drop => "dropped".to_string(),
                    Broadcast::Router(r) => format!("to {}", self.routers[r].name),
                };
                let _ = write!(extra, ", broadcasts {b}");
            }
            let routers = self.link_routers(l);
            let total: u32 = routers.iter().map(|&r| self.routers[r].weight).sum();
            let sched = match link.scheduler {
                Scheduler::Stride => "packets",
                Scheduler::Drr => "bytes",
            };
            let _ = writeln!(
                s,
                "  {}  demux {}, {mac}, MTU {}{extra}",
                link.name,
                link.demux.word(),
                link.mtu
            );
            let on_link = self.link_interfaces(l);
            let width = on_link
                .iter()
                .map(|&(r, i)| self.routers[r].interfaces[i].tag.text().len())
                .max()
                .unwrap_or(0);
            for (r, i) in on_link {
                let router = &self.routers[r];
                let itf = &router.interfaces[i];
                let _ = writeln!(
                    s,
                    "    {:<width$}  {} {} {}/{}",
                    itf.tag.text(),
                    router.name,
                    itf.name,
                    itf.address,
                    itf.prefix_len
                );
            }
            if routers.len() > 1 {
                let shares: Vec<String> = routers
                    .iter()
                    .map(|&r| {
                        let w = self.routers[r].weight;
                        format!(
                            "{} {:.0}%",
                            self.routers[r].name,
                            100.0 * f64::from(w) / f64::from(total)
                        )
                    })
                    .collect();
                let _ = writeln!(s, "    output shared by {sched}: {}", shares.join(", "));
            }
        }
        let _ = writeln!(s, "\nrouters:");
        for r in &self.routers {
            let mut routes = format!("{} route{}", r.routes.len(), plural(r.routes.len()));
            if let Some(p) = &r.routes_file {
                let _ = write!(routes, " + {}", p.display());
            }
            let _ = writeln!(
                s,
                "  {}  weight {}, {}, {routes}{}",
                r.name,
                r.weight,
                r.lookup.class(),
                match r.local {
                    Local::Discard => "",
                    Local::Host => ", local delivery to ToHost",
                }
            );
            let _ = writeln!(s, "    {}/rt output 0: local delivery", r.name);
            for (i, itf) in r.interfaces.iter().enumerate() {
                let mtu = self.interface_mtu(itf);
                let kind = match itf.tag {
                    Tag::Tunnel { .. } => ", point to point",
                    _ => "",
                };
                let _ = writeln!(
                    s,
                    "    {}/rt output {}: {} {}/{} on {} ({}), MTU {mtu}{kind}",
                    r.name,
                    i + 1,
                    itf.name,
                    itf.address,
                    itf.prefix_len,
                    self.links[itf.link].name,
                    itf.tag.text()
                );
            }
            for route in &r.routes {
                let via = match route.gateway {
                    Some(g) => format!(" via {g}"),
                    None => String::new(),
                };
                let _ = writeln!(
                    s,
                    "    route {}/{}{via} on {}",
                    route.prefix, route.len, r.interfaces[route.interface].name
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use crate::VirtualRouters;

    #[test]
    fn describes_links_shares_and_route_table_outputs() {
        let vr = VirtualRouters::from_toml(
            r#"
[[link]]
name = "eth0"
demux = "vlan"
[[router]]
name = "gold"
weight = 3
  [[router.interface]]
  link = "eth0"
  vlan = 7
  address = "10.0.0.1/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.0.0.254"
[[router]]
name = "tin"
  [[router.interface]]
  link = "eth0"
  vlan = 1000
  address = "10.0.0.1/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.0.0.253"
"#,
        )
        .unwrap();
        let d = vr.describe();
        assert!(
            d.starts_with("2 virtual routers on 1 link, queueing direct"),
            "{d}"
        );
        assert!(
            d.contains("  eth0  demux vlan, MAC from -D MAC_eth0, MTU 1500\n"),
            "{d}"
        );
        assert!(d.contains("    vlan 7     gold eth0 10.0.0.1/24\n"), "{d}");
        assert!(d.contains("    vlan 1000  tin eth0 10.0.0.1/24\n"), "{d}");
        assert!(
            d.contains("output shared by packets: gold 75%, tin 25%"),
            "{d}"
        );
        assert!(
            d.contains("    gold/rt output 1: eth0 10.0.0.1/24 on eth0 (vlan 7), MTU 1500\n"),
            "{d}"
        );
        assert!(
            d.contains("    route 0.0.0.0/0 via 10.0.0.253 on eth0\n"),
            "{d}"
        );
    }
}
