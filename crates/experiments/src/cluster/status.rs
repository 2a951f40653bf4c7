//! `bricks cluster status`: a running cluster's rates, from every
//! server's `VLBNode` counters read twice through the control sockets.
//!
//! Per server: packets per second from outside (the input role: the sum
//! of `direct`, `balanced` and `local`), delivered (the output role), forwarded (the
//! intermediate role, RouteBricks §3.2's phase 2) and the load they add
//! up to relative to the external rate R. Direct VLB keeps the load
//! between 2R (uniform traffic: every packet is handled by its input and
//! its output server only) and 3R (every packet also crosses an
//! intermediate). R here is measured: the mean external input rate of the
//! servers that have any.

use super::state::{self, State};
use crate::{Context as _, Error};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `bricks cluster status` options.
#[derive(clap::Args)]
pub struct StatusArgs {
    /// The cluster's name [default: the one that is up].
    name: Option<String>,
    /// Seconds between the two samples.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    interval: f64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Sends one command to a control socket and returns the answer.
pub fn query(socket: &Path, command: &str) -> Result<String, Error> {
    let mut conn = UnixStream::connect(socket)
        .with_context(|| format!("control socket {}", socket.display()))?;
    conn.set_read_timeout(Some(Duration::from_secs(3)))?;
    conn.set_write_timeout(Some(Duration::from_secs(3)))?;
    conn.write_all(command.as_bytes())?;
    conn.write_all(b"\n")?;
    conn.shutdown(std::net::Shutdown::Write)?;
    let mut reply = String::new();
    conn.read_to_string(&mut reply)?;
    if reply.starts_with("error:") {
        return Err(Error::Process(format!(
            "{}: {}",
            socket.display(),
            reply.trim()
        )));
    }
    Ok(reply)
}

/// One server's `VLBNode` counters (summed over its workers).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// The element's name in the configuration.
    pub element: String,
    pub values: BTreeMap<String, u64>,
}

impl Counters {
    /// Finds the `VLBNode` in a `stats` answer.
    pub fn from_stats(v: &Value) -> Option<Counters> {
        // Per-worker entries carry the class; the total has the sums.
        let element = v["workers"].as_array()?.iter().find_map(|w| {
            w["elements"].as_object()?.iter().find_map(|(name, e)| {
                (e["class"].as_str() == Some("VLBNode")).then(|| name.clone())
            })
        })?;
        let total = v["total"][&element].as_object()?;
        let values = total
            .iter()
            .filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)))
            .collect();
        Some(Counters { element, values })
    }

    /// A counter; absent ones (zero counters may be left out) are 0.
    pub fn get(&self, k: &str) -> u64 {
        self.values.get(k).copied().unwrap_or(0)
    }

    /// Whether the link on `iface` is up, as the server sees it.
    pub fn link_up(&self, iface: &str) -> Option<bool> {
        self.values.get(&format!("link {iface} up")).map(|&v| v > 0)
    }
}

/// Reads a server's counters through its control socket.
pub fn node_counters(socket: &Path) -> Result<Counters, Error> {
    let reply = query(socket, "stats")?;
    let v: Value = serde_json::from_str(reply.trim())
        .map_err(std::io::Error::from)
        .context("reading the stats answer")?;
    Counters::from_stats(&v)
        .ok_or_else(|| Error::Process("no VLBNode element in the server's counters".into()))
}

/// One sample of every server: `None` for a server that does not answer.
pub fn sample(st: &State) -> Vec<Option<Counters>> {
    st.nodes
        .iter()
        .map(|n| {
            let running = n.process.is_some_and(|(p, s)| state::alive(p, s));
            running.then(|| node_counters(&n.socket).ok()).flatten()
        })
        .collect()
}

/// Two samples `secs` apart turned into rates.
#[derive(Debug, Clone)]
pub struct Rates {
    pub secs: f64,
    pub nodes: Vec<NodeRates>,
    /// The measured R: the mean input rate of the servers with input.
    pub r_pps: f64,
}

/// One server's rates.
#[derive(Debug, Clone, Default)]
pub struct NodeRates {
    pub name: String,
    pub answering: bool,
    pub input: f64,
    pub direct: f64,
    pub balanced: f64,
    pub local: f64,
    pub forwarded: f64,
    pub delivered: f64,
    pub reordered: f64,
    pub dropped: f64,
    /// Per internal link: (interface, peer, packets/s, up).
    pub links: Vec<(String, String, f64, bool)>,
}

impl NodeRates {
    pub fn handled(&self) -> f64 {
        self.input + self.forwarded + self.delivered
    }
}

/// Counters that count packets lost inside a server.
const DROPS: [&str; 5] = [
    "no_route",
    "dead_output",
    "unknown_output",
    "hop_limit",
    "dropped",
];

impl Rates {
    pub fn between(st: &State, a: &[Option<Counters>], b: &[Option<Counters>], secs: f64) -> Rates {
        let secs = secs.max(1e-6);
        let mut nodes = Vec::new();
        for (i, n) in st.nodes.iter().enumerate() {
            let mut r = NodeRates {
                name: n.name.clone(),
                ..Default::default()
            };
            if let (Some(a), Some(b)) = (&a[i], &b[i]) {
                let d = |k: &str| b.get(k).saturating_sub(a.get(k)) as f64 / secs;
                r.answering = true;
                r.direct = d("direct");
                r.balanced = d("balanced");
                r.local = d("local");
                r.input = r.direct + r.balanced + r.local;
                r.forwarded = d("forwarded");
                r.delivered = d("delivered");
                r.reordered = d("reordered");
                r.dropped = DROPS.iter().map(|k| d(k)).sum();
                for (iface, peer) in &n.links {
                    r.links.push((
                        iface.clone(),
                        peer.clone(),
                        d(&format!("link {iface} packets")),
                        b.link_up(iface) == Some(true),
                    ));
                }
            } else {
                for (iface, peer) in &n.links {
                    r.links.push((iface.clone(), peer.clone(), 0.0, false));
                }
            }
            nodes.push(r);
        }
        // Servers with traffic from outside; a stray packet (a host's ARP
        // probe) does not make a server an input.
        let busiest = nodes.iter().map(|n| n.input).fold(0.0, f64::max);
        let inputs: Vec<f64> = nodes
            .iter()
            .map(|n| n.input)
            .filter(|&x| x > 0.0 && x >= busiest * 0.05)
            .collect();
        let r_pps = if inputs.is_empty() {
            0.0
        } else {
            inputs.iter().sum::<f64>() / inputs.len() as f64
        };
        Rates { secs, nodes, r_pps }
    }

    /// A server's load relative to R.
    pub fn load(&self, n: &NodeRates) -> Option<f64> {
        (self.r_pps > 0.0).then(|| n.handled() / self.r_pps)
    }

    fn direct_share(&self) -> Option<f64> {
        let d: f64 = self.nodes.iter().map(|n| n.direct).sum();
        let b: f64 = self.nodes.iter().map(|n| n.balanced).sum();
        (d + b > 0.0).then(|| d / (d + b))
    }

    pub fn json(&self, st: &State) -> Value {
        json!({
            "name": st.name,
            "cluster": st.cluster,
            "interval_s": self.secs,
            "r_pps": self.r_pps,
            "direct_share": self.direct_share(),
            "nodes": self.nodes.iter().map(|n| json!({
                "name": n.name,
                "answering": n.answering,
                "input_pps": n.input,
                "direct_pps": n.direct,
                "balanced_pps": n.balanced,
                "local_pps": n.local,
                "forwarded_pps": n.forwarded,
                "delivered_pps": n.delivered,
                "handled_pps": n.handled(),
                "load": self.load(n),
                "reordered_pps": n.reordered,
                "reordered_fraction": (n.delivered > 0.0).then(|| n.reordered / n.delivered),
                "dropped_pps": n.dropped,
                "links": n.links.iter().map(|(i, p, pps, up)| json!({
                    "iface": i, "peer": p, "pps": pps, "up": up,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    pub fn text(&self, st: &State) -> String {
        let si = super::si;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "cluster {} ({} servers), over {:.1} s; R (mean input of the servers with traffic from outside) = {} pkt/s",
            st.name,
            st.nodes.len(),
            self.secs,
            si(self.r_pps)
        );
        let _ = writeln!(
            s,
            "  {:<8} {:>10} {:>10} {:>10} {:>10} {:>7} {:>8} {:>9} {:>9}",
            "server",
            "outside/s",
            "deliver/s",
            "transit/s",
            "handled/s",
            "load",
            "direct",
            "reordered",
            "dropped/s"
        );
        for n in &self.nodes {
            if !n.answering {
                let _ = writeln!(s, "  {:<8} not answering (down?)", n.name);
                continue;
            }
            let direct = if n.direct + n.balanced > 0.0 {
                format!("{:.1}%", 100.0 * n.direct / (n.direct + n.balanced))
            } else {
                "-".into()
            };
            let reordered = if n.delivered > 0.0 {
                format!("{:.3}%", 100.0 * n.reordered / n.delivered)
            } else {
                "-".into()
            };
            let _ = writeln!(
                s,
                "  {:<8} {:>10} {:>10} {:>10} {:>10} {:>7} {:>8} {:>9} {:>9}",
                n.name,
                si(n.input),
                si(n.delivered),
                si(n.forwarded),
                si(n.handled()),
                self.load(n).map_or("-".into(), |l| format!("{l:.2}R")),
                direct,
                reordered,
                si(n.dropped)
            );
        }
        let _ = writeln!(s, "  links (packets/s sent, as each end sees it):");
        for n in &self.nodes {
            let links: Vec<String> = n
                .links
                .iter()
                .map(|(i, p, pps, up)| {
                    format!("{i}->{p} {} {}", si(*pps), if *up { "up" } else { "DOWN" })
                })
                .collect();
            let _ = writeln!(s, "    {:<8} {}", n.name, links.join(", "));
        }
        if let Some(d) = self.direct_share() {
            let _ = writeln!(
                s,
                "  direct {:.1}%, balanced {:.1}% of the packets from outside",
                100.0 * d,
                100.0 * (1.0 - d)
            );
        }
        s
    }
}

/// `bricks cluster status`.
pub fn status_command(a: &StatusArgs) -> Result<ExitCode, Error> {
    if !(a.interval.is_finite() && a.interval > 0.0) {
        return Err(Error::Argument(
            "--interval must be a positive number of seconds".into(),
        ));
    }
    let Some(name) = state::only_one(a.name.as_deref())? else {
        println!("No cluster is up.");
        return Ok(ExitCode::SUCCESS);
    };
    let Some(st) = State::load(&name)? else {
        return Err(Error::Argument(format!("cluster {name} is not up")));
    };
    let t0 = Instant::now();
    let first = sample(&st);
    std::thread::sleep(Duration::from_secs_f64(a.interval));
    let second = sample(&st);
    let rates = Rates::between(&st, &first, &second, t0.elapsed().as_secs_f64());
    if a.json {
        println!("{}", rates.json(&st));
    } else {
        print!("{}", rates.text(&st));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::state::NodeState;

    fn stats(counters: &[(&str, u64)]) -> Value {
        let mut m = serde_json::Map::new();
        for (k, v) in counters {
            m.insert(k.to_string(), (*v).into());
        }
        let mut w = m.clone();
        w.insert("class".into(), "VLBNode".into());
        json!({
            "workers": [{"worker": 0, "elements": {"vlb": w, "q": {"class": "Queue"}}}],
            "total": {"vlb": m, "q": {}},
        })
    }

    fn node(name: &str, links: &[(&str, &str)]) -> NodeState {
        NodeState {
            name: name.into(),
            namespace: format!("bc-t-{name}"),
            config: "/x".into(),
            socket: "/x".into(),
            log: "/x".into(),
            argv: Vec::new(),
            process: None,
            macs: Vec::new(),
            links: links
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        }
    }

    #[test]
    fn counters_are_found_by_class_and_absent_ones_are_zero() {
        let c = Counters::from_stats(&stats(&[
            ("direct", 10),
            ("balanced", 5),
            ("link vn2 up", 1),
            ("link vn3 up", 0),
        ]))
        .unwrap();
        assert_eq!(c.element, "vlb");
        assert_eq!(c.get("direct") + c.get("balanced"), 15);
        assert_eq!(c.get("forwarded"), 0);
        assert_eq!(c.link_up("vn2"), Some(true));
        assert_eq!(c.link_up("vn3"), Some(false));
        assert_eq!(c.link_up("vn4"), None);
        assert!(Counters::from_stats(&json!({"workers": [], "total": {}})).is_none());
    }

    #[test]
    fn load_is_relative_to_the_mean_external_input() {
        let st = State {
            name: "t".into(),
            cluster: "t".into(),
            source_file: "/x".into(),
            cluster_file: "/x".into(),
            rate_bps: 0,
            namespaces: Vec::new(),
            nodes: vec![node("n1", &[("vn2", "n2")]), node("n2", &[("vn1", "n1")])],
            hosts: Vec::new(),
            builder: None,
        };
        let a = vec![
            Some(Counters::from_stats(&stats(&[("direct", 0)])).unwrap()),
            Some(Counters::from_stats(&stats(&[("direct", 0)])).unwrap()),
        ];
        // n1 takes 1000 packets in and delivers 1000; n2 the same, and
        // forwards 1000 more (3R).
        let b = vec![
            Some(
                Counters::from_stats(&stats(&[
                    ("direct", 800),
                    ("balanced", 200),
                    ("delivered", 1000),
                    ("link vn2 packets", 1000),
                    ("link vn2 up", 1),
                ]))
                .unwrap(),
            ),
            Some(
                Counters::from_stats(&stats(&[
                    ("direct", 1000),
                    ("delivered", 1000),
                    ("forwarded", 1000),
                    ("reordered", 10),
                ]))
                .unwrap(),
            ),
        ];
        let r = Rates::between(&st, &a, &b, 1.0);
        assert_eq!(r.r_pps, 1000.0);
        assert_eq!(r.load(&r.nodes[0]), Some(2.0));
        assert_eq!(r.load(&r.nodes[1]), Some(3.0));
        assert_eq!(r.nodes[0].links[0].2, 1000.0);
        assert!(r.nodes[0].links[0].3);
        assert!(!r.nodes[1].links[0].3);
        let t = r.text(&st);
        assert!(t.contains("2.00R") && t.contains("3.00R"), "{t}");
        assert!(t.contains("vn1->n1 0 DOWN"), "{t}");
        let j = r.json(&st);
        assert_eq!(j["nodes"][1]["reordered_fraction"], 0.01);
        assert_eq!(j["direct_share"], 0.9);
    }
}
