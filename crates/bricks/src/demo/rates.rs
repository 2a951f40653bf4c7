//! The router's live counters, as `bricks run --stats-json` prints them
//! (one JSON object a line), turned into per-port and per-core rates.

use super::topology::Port;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One line of `--stats-json`: every element's counters on every worker.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Sample {
    /// Seconds since the router started.
    pub elapsed: f64,
    /// Per worker: element name to its class and counters.
    pub workers: Vec<BTreeMap<String, Element>>,
}

/// One element's counters on one worker.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Element {
    /// Its class.
    pub class: String,
    /// Counter name to value.
    pub counters: BTreeMap<String, u64>,
}

impl Sample {
    /// Parses one line; `None` for anything that is not a stats object.
    pub fn parse(line: &str) -> Option<Sample> {
        let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
        let elapsed = v.get("elapsed")?.as_f64()?;
        let mut workers = Vec::new();
        for w in v.get("workers")?.as_array()? {
            let mut elements = BTreeMap::new();
            for (name, e) in w.get("elements")?.as_object()? {
                let Some(obj) = e.as_object() else { continue };
                let class = obj
                    .get("class")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default()
                    .to_string();
                let counters = obj
                    .iter()
                    .filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n)))
                    .collect();
                elements.insert(name.clone(), Element { class, counters });
            }
            workers.push(elements);
        }
        Some(Sample { elapsed, workers })
    }

    /// Counter `counter` of element `name` summed over the workers.
    pub fn total(&self, name: &str, counter: &str) -> u64 {
        (0..self.workers.len())
            .map(|w| self.on_worker(w, name, counter))
            .sum()
    }

    /// Counter `counter` of element `name` on worker `w` (0 if absent).
    pub fn on_worker(&self, w: usize, name: &str, counter: &str) -> u64 {
        self.workers
            .get(w)
            .and_then(|m| m.get(name))
            .map_or(0, |e| e.get(counter))
    }

    /// Packets and bytes the device elements of class `class` moved on
    /// worker `w`.
    fn worker_class(&self, w: usize, class: &str) -> (u64, u64) {
        self.workers.get(w).map_or((0, 0), |m| {
            m.values()
                .filter(|e| e.class == class)
                .fold((0, 0), |(p, b), e| (p + e.get("count"), b + e.bytes()))
        })
    }
}

impl Element {
    fn get(&self, counter: &str) -> u64 {
        self.counters.get(counter).copied().unwrap_or(0)
    }

    /// Bytes moved, under whichever name the class reports them.
    fn bytes(&self) -> u64 {
        ["bytes", "byte_count"]
            .iter()
            .find_map(|k| self.counters.get(*k).copied())
            .unwrap_or(0)
    }
}

/// Packets and bytes per second between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rate {
    /// Packets per second.
    pub pps: f64,
    /// Bits per second (frame bytes, no preamble or FCS).
    pub bps: f64,
}

impl Rate {
    fn between(p0: u64, b0: u64, p1: u64, b1: u64, secs: f64) -> Rate {
        Rate {
            pps: p1.saturating_sub(p0) as f64 / secs,
            bps: b1.saturating_sub(b0) as f64 * 8.0 / secs,
        }
    }

    fn is_zero(&self) -> bool {
        self.pps == 0.0
    }
}

impl core::fmt::Display for Rate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{:>6} pkt/s {:>7.2} Mbit/s",
            crate::runner::si(self.pps),
            self.bps / 1e6
        )
    }
}

/// Receive and transmit rates of each port and receive rate of each
/// worker, from `prev` to `cur`.
pub(crate) struct Rates {
    /// Seconds since the router started.
    pub elapsed: f64,
    /// Per port: (interface, received, sent).
    pub ports: Vec<(&'static str, Rate, Rate)>,
    /// Per worker: what its device elements received.
    pub workers: Vec<Rate>,
}

impl Rates {
    /// The rates between two samples; `None` when no time passed.
    pub fn between(prev: &Sample, cur: &Sample, ports: &[Port]) -> Option<Rates> {
        let secs = cur.elapsed - prev.elapsed;
        if secs <= 0.0 {
            return None;
        }
        let port_rate = |name: &str| {
            let bytes = |s: &Sample| {
                (0..s.workers.len())
                    .map(|w| s.workers[w].get(name).map_or(0, Element::bytes))
                    .sum::<u64>()
            };
            Rate::between(
                prev.total(name, "count"),
                bytes(prev),
                cur.total(name, "count"),
                bytes(cur),
                secs,
            )
        };
        let ports = ports
            .iter()
            .map(|p| (p.dev, port_rate(p.rx_element), port_rate(p.tx_element)))
            .collect();
        let workers = (0..cur.workers.len())
            .map(|w| {
                let (p0, b0) = prev.worker_class(w, "FromDevice");
                let (p1, b1) = cur.worker_class(w, "FromDevice");
                Rate::between(p0, b0, p1, b1, secs)
            })
            .collect();
        Some(Rates {
            elapsed: cur.elapsed,
            ports,
            workers,
        })
    }

    /// Nothing moved.
    pub fn idle(&self) -> bool {
        self.ports
            .iter()
            .all(|(_, rx, tx)| rx.is_zero() && tx.is_zero())
    }

    /// A few lines: one per port, one for the cores.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (i, (dev, rx, tx)) in self.ports.iter().enumerate() {
            let time = if i == 0 {
                format!("{:5.0} s", self.elapsed)
            } else {
                String::new()
            };
            let _ = writeln!(s, "{time:>7}  {dev:<5} in {rx}   out {tx}");
        }
        let cores: Vec<String> = self
            .workers
            .iter()
            .enumerate()
            .map(|(w, r)| {
                format!(
                    "core {w} {:>6} pkt/s {:>7.2} Mbit/s",
                    crate::runner::si(r.pps),
                    r.bps / 1e6
                )
            })
            .collect();
        let _ = writeln!(s, "{:>7}  {}", "", cores.join("   "));
        s
    }
}

/// The router's counters at the end, per port, summed over workers.
pub(crate) fn port_table(sample: &Sample, ports: &[Port]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "    {:<6} {:>12} {:>14} {:>12} {:>14} {:>8}",
        "port", "in packets", "in bytes", "out packets", "out bytes", "drops"
    );
    for (i, p) in ports.iter().enumerate() {
        let bytes = |name: &str| {
            sample
                .workers
                .iter()
                .map(|m| m.get(name).map_or(0, Element::bytes))
                .sum::<u64>()
        };
        // Packets lost on the way out: a full queue, a full device ring.
        let drops = sample.total(&format!("q{i}"), "drops") + sample.total(p.tx_element, "drops");
        let _ = writeln!(
            s,
            "    {:<6} {:>12} {:>14} {:>12} {:>14} {:>8}",
            p.dev,
            sample.total(p.rx_element, "count"),
            bytes(p.rx_element),
            sample.total(p.tx_element, "count"),
            bytes(p.tx_element),
            drops
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::topology::PORTS;
    use super::*;

    fn line(elapsed: f64, w0: (u64, u64), w1: (u64, u64)) -> String {
        format!(
            r#"{{"elapsed":{elapsed},"workers":[
                {{"worker":0,"elements":{{"in0":{{"class":"FromDevice","count":{},"bytes":{}}},
                  "out1":{{"class":"ToDevice","count":{},"bytes":{}}},"q1":{{"class":"Queue","drops":3}}}}}},
                {{"worker":1,"elements":{{"in0":{{"class":"FromDevice","count":{},"bytes":{}}}}}}}]}}"#,
            w0.0, w0.1, w0.0, w0.1, w1.0, w1.1
        )
        .replace('\n', "")
    }

    #[test]
    fn parses_a_stats_line_and_sums_workers() {
        let s = Sample::parse(&line(2.0, (10, 1000), (5, 500))).unwrap();
        assert_eq!(s.elapsed, 2.0);
        assert_eq!(s.workers.len(), 2);
        assert_eq!(s.total("in0", "count"), 15);
        assert_eq!(s.on_worker(1, "in0", "bytes"), 500);
        assert_eq!(s.total("nothing", "count"), 0);
        assert_eq!(Sample::parse("error: something"), None);
        assert_eq!(Sample::parse("{\"x\":1}"), None);
    }

    #[test]
    fn rates_per_port_and_core() {
        let a = Sample::parse(&line(1.0, (10, 1000), (5, 500))).unwrap();
        let b = Sample::parse(&line(3.0, (30, 3000), (5, 500))).unwrap();
        let r = Rates::between(&a, &b, &PORTS).unwrap();
        assert_eq!(r.ports[0].0, "eth0");
        assert_eq!(r.ports[0].1.pps, 10.0);
        assert_eq!(r.ports[0].1.bps, 8000.0);
        assert_eq!(r.ports[1].2.pps, 10.0);
        assert_eq!(r.workers[0].pps, 10.0);
        assert_eq!(r.workers[1].pps, 0.0);
        assert!(!r.idle());
        assert!(Rates::between(&a, &a, &PORTS).is_none());
        let text = r.render();
        assert!(text.contains("eth0"), "{text}");
        assert!(text.contains("core 1"), "{text}");
        let table = port_table(&b, &PORTS);
        assert!(table.contains("eth1"), "{table}");
    }
}
