//! `bricks multistage status`: a running multistage router's rates, read
//! twice: every port's packets from the kernel's end of its veth (the
//! host's interface behind a front port, the bridge's port behind a back
//! port: what crossed the wire, whatever the box did with it), and every
//! balancer's `L2Balancer` counters through its control socket: its
//! shares per router and per back port, what came back, what it refused,
//! and which routers it sees live.

use super::state::{BoxState, Role, State};
use anyhow::Context as _;
use bricks_experiments::cluster::status::query;
use bricks_experiments::netup::alive;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `bricks multistage status` options.
#[derive(clap::Args)]
pub(crate) struct StatusArgs {
    /// The multistage router's name [default: the one that is up].
    name: Option<String>,
    /// Seconds between the two samples.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    interval: f64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// The class of the balancers' element.
const BALANCER_CLASS: &str = "L2Balancer";

/// A box's counters of one element class: sums over the workers, and the
/// first worker's own values (gauges such as `live`, which every worker
/// reads from one shared table, would be counted once per worker in the
/// sums).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counters {
    /// The element's name in the configuration.
    pub element: String,
    pub total: BTreeMap<String, u64>,
    pub gauges: BTreeMap<String, u64>,
}

fn numbers(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, n)| Some((k.clone(), n.as_u64()?)))
                .collect()
        })
        .unwrap_or_default()
}

impl Counters {
    /// Finds the first element of class `class` in a `stats` answer.
    pub(crate) fn from_stats(v: &Value, class: &str) -> Option<Counters> {
        let w0 = v["workers"].as_array()?.first()?;
        let (element, e) = w0["elements"]
            .as_object()?
            .iter()
            .find(|(_, e)| e["class"].as_str() == Some(class))?;
        Some(Counters {
            element: element.clone(),
            total: numbers(&v["total"][element]),
            gauges: numbers(e),
        })
    }

    /// A counter summed over workers; absent ones are 0.
    pub(crate) fn get(&self, k: &str) -> u64 {
        self.total.get(k).copied().unwrap_or(0)
    }

    /// A gauge as one worker reports it.
    pub(crate) fn gauge(&self, k: &str) -> Option<u64> {
        self.gauges.get(k).copied()
    }
}

/// Reads a box's `L2Balancer` counters through its control socket.
pub(crate) fn balancer_counters(b: &BoxState) -> anyhow::Result<Counters> {
    let v = query_stats(b)?;
    Counters::from_stats(&v, BALANCER_CLASS)
        .with_context(|| format!("no {BALANCER_CLASS} element in {}'s counters", b.name))
}

/// A box's `stats` answer through its control socket.
pub(crate) fn query_stats(b: &BoxState) -> anyhow::Result<Value> {
    let reply = query(&b.socket, "stats")?;
    serde_json::from_str(reply.trim()).context("reading the stats answer")
}

/// Whether a box answers on its control socket.
pub(crate) fn answers(b: &BoxState) -> bool {
    query_stats(b).is_ok()
}

/// Packets and bytes through one interface, as its kernel counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LinkStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

/// Every interface's counters in namespace `ns` (`ip -s -j link show`).
pub(crate) fn link_stats(ns: &str) -> anyhow::Result<BTreeMap<String, LinkStats>> {
    let out = bricks_netns::ip(&["-s", "-j", "-n", ns, "link", "show"])
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    parse_link_stats(&String::from_utf8_lossy(&out.stdout))
}

fn parse_link_stats(text: &str) -> anyhow::Result<BTreeMap<String, LinkStats>> {
    let v: Value = serde_json::from_str(text.trim()).context("reading `ip -s -j link`")?;
    let mut m = BTreeMap::new();
    for l in v.as_array().context("`ip -s -j link`: not a list")? {
        let Some(name) = l["ifname"].as_str() else {
            continue;
        };
        let st = &l["stats64"];
        let g = |dir: &str, k: &str| st[dir][k].as_u64().unwrap_or(0);
        m.insert(
            name.to_string(),
            LinkStats {
                rx_packets: g("rx", "packets"),
                tx_packets: g("tx", "packets"),
                rx_bytes: g("rx", "bytes"),
                tx_bytes: g("tx", "bytes"),
            },
        );
    }
    Ok(m)
}

/// One sample of everything.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sample {
    /// Per box (in the state's order): its balancer counters (balancers
    /// that answer), or whether it answers (routers).
    pub boxes: Vec<BoxSample>,
    /// Per box, per port (fronts then backs): (packets in, packets out) as
    /// the box sees them, from the kernel end across the wire.
    pub ports: Vec<Vec<(u64, u64)>>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct BoxSample {
    pub running: bool,
    pub answering: bool,
    pub counters: Option<Counters>,
}

/// Samples every box and port.
pub(crate) fn sample(st: &State) -> Sample {
    let switch = link_stats(&st.switch.namespace).unwrap_or_default();
    let mut hosts = BTreeMap::new();
    for h in &st.hosts {
        if let Ok(m) = link_stats(&h.namespace) {
            if let Some(l) = m.get(&h.iface) {
                hosts.insert((h.balancer.clone(), h.port.clone()), *l);
            }
        }
    }
    let mut out = Sample::default();
    for b in &st.boxes {
        let running = b.process.is_some_and(|(p, s)| alive(p, s));
        let (answering, counters) = match (running, b.role) {
            (false, _) => (false, None),
            (true, Role::Balancer) => match balancer_counters(b) {
                Ok(c) => (true, Some(c)),
                Err(_) => (answers(b), None),
            },
            (true, Role::Router) => (answers(b), None),
        };
        out.boxes.push(BoxSample {
            running,
            answering,
            counters,
        });
        let mut ports = Vec::new();
        for f in &b.fronts {
            // The host's transmit is the port's receive.
            let l = hosts
                .get(&(b.name.clone(), f.iface.clone()))
                .copied()
                .unwrap_or_default();
            ports.push((l.tx_packets, l.rx_packets));
        }
        for p in &b.backs {
            let l = switch.get(&p.switch_port).copied().unwrap_or_default();
            ports.push((l.tx_packets, l.rx_packets));
        }
        out.ports.push(ports);
    }
    out
}

/// Two samples turned into rates.
#[derive(Debug, Clone)]
pub(crate) struct Rates {
    pub secs: f64,
    pub boxes: Vec<BoxRates>,
}

/// One port's rates.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PortRates {
    pub iface: String,
    /// `front` or `back`.
    pub kind: &'static str,
    /// Global front port index, or back port index.
    pub index: usize,
    pub in_pps: f64,
    pub out_pps: f64,
}

/// One balancer's view.
#[derive(Debug, Clone, Default)]
pub(crate) struct BalancerRates {
    pub balanced: f64,
    /// Per router index: packets/s sent to it.
    pub to_router: Vec<f64>,
    /// Per back port: packets/s sent out of it.
    pub to_back: Vec<f64>,
    pub returned: f64,
    pub unknown_return: f64,
    pub replicated: f64,
    pub spoofed: f64,
    pub no_router: f64,
    /// Routers it counts live, if it says.
    pub live: Option<u64>,
    /// Per router index: live as it sees it, if it says.
    pub router_live: Vec<Option<bool>>,
    /// Since it started.
    pub router_down: u64,
    pub router_up: u64,
}

/// One box's rates.
#[derive(Debug, Clone, Default)]
pub(crate) struct BoxRates {
    pub name: String,
    pub role: &'static str,
    pub running: bool,
    pub answering: bool,
    pub in_pps: f64,
    pub out_pps: f64,
    pub ports: Vec<PortRates>,
    pub balancer: Option<BalancerRates>,
}

/// A per-index counter's name: `to_router0`, `to_back1`.
fn indexed(k: &str, i: usize) -> String {
    format!("{k}{i}")
}

/// Whether router `i` is live as `c` says, if the element gives a
/// `live_router{i}` gauge (the `live` count is always there).
fn router_live(c: &Counters, i: usize) -> Option<bool> {
    c.gauge(&indexed("live_router", i)).map(|v| v > 0)
}

impl Rates {
    pub(crate) fn between(st: &State, a: &Sample, b: &Sample, secs: f64) -> Rates {
        let secs = secs.max(1e-6);
        let routers = st.routers().count();
        let mut boxes = Vec::new();
        for (i, x) in st.boxes.iter().enumerate() {
            let d = |p: u64, q: u64| q.saturating_sub(p) as f64 / secs;
            let mut r = BoxRates {
                name: x.name.clone(),
                role: x.role.as_str(),
                running: b.boxes.get(i).is_some_and(|s| s.running),
                answering: b.boxes.get(i).is_some_and(|s| s.answering),
                ..Default::default()
            };
            let ports = x
                .fronts
                .iter()
                .map(|p| ("front", p))
                .chain(x.backs.iter().map(|p| ("back", p)));
            for (j, (kind, p)) in ports.enumerate() {
                let pa = a.ports.get(i).and_then(|v| v.get(j)).copied();
                let pb = b.ports.get(i).and_then(|v| v.get(j)).copied();
                let (inp, out) = match (pa, pb) {
                    (Some(pa), Some(pb)) => (d(pa.0, pb.0), d(pa.1, pb.1)),
                    _ => (0.0, 0.0),
                };
                r.in_pps += inp;
                r.out_pps += out;
                r.ports.push(PortRates {
                    iface: p.iface.clone(),
                    kind,
                    index: p.index,
                    in_pps: inp,
                    out_pps: out,
                });
            }
            let ca = a.boxes.get(i).and_then(|s| s.counters.as_ref());
            let cb = b.boxes.get(i).and_then(|s| s.counters.as_ref());
            if let (Some(ca), Some(cb)) = (ca, cb) {
                let dc = |k: &str| cb.get(k).saturating_sub(ca.get(k)) as f64 / secs;
                r.balancer = Some(BalancerRates {
                    balanced: dc("balanced"),
                    to_router: (0..routers).map(|i| dc(&indexed("to_router", i))).collect(),
                    to_back: (0..x.backs.len())
                        .map(|j| dc(&indexed("to_back", j)))
                        .collect(),
                    returned: dc("returned"),
                    unknown_return: dc("unknown_return"),
                    replicated: dc("replicated"),
                    spoofed: dc("spoofed"),
                    no_router: dc("no_router"),
                    live: cb.gauge("live"),
                    router_live: (0..routers).map(|i| router_live(cb, i)).collect(),
                    router_down: cb.get("router_down"),
                    router_up: cb.get("router_up"),
                });
            }
            boxes.push(r);
        }
        Rates { secs, boxes }
    }

    /// Each value's share of their sum, if the sum is not 0.
    fn shares(v: &[f64]) -> Vec<Option<f64>> {
        let sum: f64 = v.iter().sum();
        v.iter().map(|x| (sum > 0.0).then(|| x / sum)).collect()
    }

    pub(crate) fn json(&self, st: &State) -> Value {
        let routers: Vec<&str> = st.routers().map(|r| r.name.as_str()).collect();
        json!({
            "name": st.name,
            "multistage": st.multistage,
            "interval_s": self.secs,
            "balancers": st.balancers().count(),
            "routers": routers,
            "boxes": self.boxes.iter().map(|b| json!({
                "name": b.name,
                "role": b.role,
                "running": b.running,
                "answering": b.answering,
                "in_pps": b.in_pps,
                "out_pps": b.out_pps,
                "ports": b.ports.iter().map(|p| json!({
                    "iface": p.iface, "kind": p.kind, "index": p.index,
                    "in_pps": p.in_pps, "out_pps": p.out_pps,
                })).collect::<Vec<_>>(),
                "balancer": b.balancer.as_ref().map(|l| json!({
                    "balanced_pps": l.balanced,
                    "to_router_pps": l.to_router,
                    "router_shares": Rates::shares(&l.to_router),
                    "to_back_pps": l.to_back,
                    "back_shares": Rates::shares(&l.to_back),
                    "returned_pps": l.returned,
                    "unknown_return_pps": l.unknown_return,
                    "replicated_pps": l.replicated,
                    "spoofed_pps": l.spoofed,
                    "no_router_pps": l.no_router,
                    "live": l.live,
                    "router_live": l.router_live,
                    "router_down": l.router_down,
                    "router_up": l.router_up,
                })),
            })).collect::<Vec<_>>(),
        })
    }

    pub(crate) fn text(&self, st: &State) -> String {
        let si = crate::runner::si;
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.1}%", 100.0 * x));
        let routers: Vec<&str> = st.routers().map(|r| r.name.as_str()).collect();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "multistage {} ({}, {}, switch {}), over {:.1} s",
            st.name,
            count(st.balancers().count(), "balancer"),
            count(routers.len(), "router"),
            st.switch.namespace,
            self.secs
        );
        let _ = writeln!(
            s,
            "  {:<10} {:<9} {:>9} {:>9}  ports (in/s out/s)",
            "box", "role", "in/s", "out/s"
        );
        for b in &self.boxes {
            let state = if !b.running {
                " DOWN (not running)"
            } else if !b.answering {
                " not answering"
            } else {
                ""
            };
            let ports: Vec<String> = b
                .ports
                .iter()
                .map(|p| {
                    let which = if p.kind == "front" {
                        format!("k{}", p.index)
                    } else {
                        "back".into()
                    };
                    format!("{} ({which}) {}/{}", p.iface, si(p.in_pps), si(p.out_pps))
                })
                .collect();
            let _ = writeln!(
                s,
                "  {:<10} {:<9} {:>9} {:>9}  {}{state}",
                b.name,
                b.role,
                si(b.in_pps),
                si(b.out_pps),
                ports.join(", ")
            );
        }
        for b in &self.boxes {
            let Some(l) = &b.balancer else {
                if b.role == "balancer" && b.running {
                    let _ = writeln!(s, "  {}: no balancer counters", b.name);
                }
                continue;
            };
            let shares = Rates::shares(&l.to_router);
            let per_router: Vec<String> = routers
                .iter()
                .zip(&shares)
                .map(|(r, x)| format!("{r} {}", pct(*x)))
                .collect();
            let back_shares = Rates::shares(&l.to_back);
            let per_back: Vec<String> = st.boxes[st.find_box(&b.name).unwrap_or(0)]
                .backs
                .iter()
                .zip(&back_shares)
                .map(|(p, x)| format!("{} {}", p.iface, pct(*x)))
                .collect();
            let live: Vec<String> = routers
                .iter()
                .zip(&l.router_live)
                .filter_map(|(r, x)| x.map(|up| format!("{r} {}", if up { "up" } else { "DOWN" })))
                .collect();
            let _ = writeln!(
                s,
                "  {}: balanced {}/s: {}; back ports: {}",
                b.name,
                si(l.balanced),
                per_router.join(", "),
                per_back.join(", ")
            );
            let _ = writeln!(
                s,
                "      live {}/{}{}; router_down {}, router_up {}; returned {}/s, unknown_return {}/s, \
                 replicated {}/s, spoofed {}/s, no_router {}/s",
                l.live.map_or("?".to_string(), |n| n.to_string()),
                routers.len(),
                if live.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", live.join(", "))
                },
                l.router_down,
                l.router_up,
                si(l.returned),
                si(l.unknown_return),
                si(l.replicated),
                si(l.spoofed),
                si(l.no_router)
            );
        }
        s
    }
}

/// `3 routers`, `1 balancer`.
pub(crate) fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// `bricks multistage status`.
pub(crate) fn status_command(a: &StatusArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        a.interval.is_finite() && a.interval > 0.0,
        "--interval must be a positive number of seconds"
    );
    let Some(name) = super::state::only_one(a.name.as_deref())? else {
        println!("No multistage router is up.");
        return Ok(ExitCode::SUCCESS);
    };
    let Some(st) = State::load(&name)? else {
        anyhow::bail!("multistage router {name} is not up");
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

    fn stats(counters: &[(&str, u64)], workers: u64) -> Value {
        let mut m = serde_json::Map::new();
        for (k, v) in counters {
            m.insert(k.to_string(), (*v).into());
        }
        let mut w = m.clone();
        w.insert("class".into(), BALANCER_CLASS.into());
        let total: serde_json::Map<String, Value> = m
            .iter()
            .map(|(k, v)| (k.clone(), (v.as_u64().unwrap() * workers).into()))
            .collect();
        json!({
            "workers": [{"worker": 0, "elements": {"q": {"class": "Queue"}, "lb": w}}],
            "total": {"lb": total, "q": {}},
        })
    }

    #[test]
    fn counters_are_found_by_class_with_gauges_from_one_worker() {
        let c = Counters::from_stats(&stats(&[("balanced", 10), ("live", 2)], 2), BALANCER_CLASS)
            .unwrap();
        assert_eq!(c.element, "lb");
        assert_eq!(c.get("balanced"), 20);
        assert_eq!(c.gauge("live"), Some(2));
        assert_eq!(c.get("spoofed"), 0);
        assert!(Counters::from_stats(&stats(&[], 1), "VLBNode").is_none());
    }

    #[test]
    fn ip_link_statistics_are_read_per_interface() {
        let text = r#"[{"ifindex":1,"ifname":"lo","stats64":{"rx":{"bytes":5,"packets":1},"tx":{"bytes":5,"packets":1}}},
            {"ifindex":7,"ifname":"sw0","stats64":{"rx":{"bytes":6400,"packets":100},"tx":{"bytes":3200,"packets":50}}}]"#;
        let m = parse_link_stats(text).unwrap();
        assert_eq!(m["sw0"].rx_packets, 100);
        assert_eq!(m["sw0"].tx_packets, 50);
        assert_eq!(m["sw0"].rx_bytes, 6400);
        assert!(parse_link_stats("not json").is_err());
    }

    #[test]
    fn shares_per_router_and_back_port_come_from_the_counter_deltas() {
        let st = crate::multistage::state::tests::sample();
        let c = |v: &[(&str, u64)]| Counters::from_stats(&stats(v, 1), BALANCER_CLASS);
        let a = Sample {
            boxes: vec![
                BoxSample {
                    running: true,
                    answering: true,
                    counters: c(&[("balanced", 100), ("to_router0", 100), ("to_back0", 100)]),
                },
                BoxSample {
                    running: true,
                    answering: true,
                    counters: None,
                },
            ],
            ports: vec![vec![(10, 10), (10, 10)], vec![(0, 0)]],
        };
        let b = Sample {
            boxes: vec![
                BoxSample {
                    running: true,
                    answering: true,
                    counters: c(&[
                        ("balanced", 1100),
                        ("to_router0", 1100),
                        ("to_back0", 1100),
                        ("live", 1),
                        ("router_down", 1),
                        ("router_up", 2),
                        ("spoofed", 5),
                    ]),
                },
                BoxSample {
                    running: false,
                    answering: false,
                    counters: None,
                },
            ],
            ports: vec![vec![(1010, 20), (30, 1010)], vec![(0, 0)]],
        };
        let r = Rates::between(&st, &a, &b, 2.0);
        let l = r.boxes[0].balancer.as_ref().unwrap();
        assert_eq!(l.balanced, 500.0);
        assert_eq!(l.to_router, vec![500.0]);
        assert_eq!(l.to_back, vec![500.0]);
        assert_eq!(l.spoofed, 2.5);
        assert_eq!((l.live, l.router_down, l.router_up), (Some(1), 1, 2));
        // Front port: 1000 in, 10 out over 2 s; the back port the reverse.
        assert_eq!(r.boxes[0].ports[0].in_pps, 500.0);
        assert_eq!(r.boxes[0].ports[0].out_pps, 5.0);
        assert_eq!(r.boxes[0].ports[1].out_pps, 500.0);
        assert_eq!(r.boxes[0].in_pps, 510.0);
        let j = r.json(&st);
        assert_eq!(j["boxes"][0]["balancer"]["router_shares"][0], 1.0);
        assert_eq!(j["boxes"][1]["running"], false);
        assert!(j["boxes"][1]["balancer"].is_null());
        let t = r.text(&st);
        assert!(t.contains("r1 100.0%") && t.contains("back0 100.0%"), "{t}");
        assert!(
            t.contains("live 1/1") && t.contains("DOWN (not running)"),
            "{t}"
        );
    }
}
