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

    /// Packets the router dropped on port `p`, summed over the workers.
    pub fn port_drops(&self, p: &Port) -> u64 {
        p.drops.iter().map(|(e, c)| self.total(e, c)).sum()
    }

    /// Counter `counter` of every element of class `class`, summed over
    /// the elements and the workers.
    pub fn class_total(&self, class: &str, counter: &str) -> u64 {
        self.workers
            .iter()
            .flat_map(|m| m.values())
            .filter(|e| e.class == class)
            .map(|e| e.get(counter))
            .sum()
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
}

/// One port's rates between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PortRates {
    /// The router's interface.
    pub dev: &'static str,
    /// What it received.
    pub rx: Rate,
    /// What it sent.
    pub tx: Rate,
    /// Packets the router dropped on it in between (see [`Port::drops`]).
    pub drops: u64,
}

/// Receive and transmit rates and drops of each port, and receive rate of
/// each worker, from `prev` to `cur`.
pub(crate) struct Rates {
    /// Seconds since the router started.
    pub elapsed: f64,
    /// Per port.
    pub ports: Vec<PortRates>,
    /// Per worker: what its device elements received.
    pub workers: Vec<Rate>,
}

/// The columns of [`Rates::render`]: time, port, in, out, drop, core.
const ROW: [usize; 9] = [5, 5, 8, 7, 10, 7, 5, 4, 6];

fn row(cells: [&str; 9]) -> String {
    let [time, port, in_pps, in_bps, out_pps, out_bps, drop, core, core_pps] = cells;
    let w = ROW;
    format!(
        "{time:>0$}  {port:<1$} {in_pps:>2$} {in_bps:>3$} {out_pps:>4$} {out_bps:>5$} \
         {drop:>6$} | {core:>7$} {core_pps:>8$}",
        w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]
    )
    .trim_end()
    .to_string()
}

impl Rates {
    /// The rates between two samples; `None` when no time passed. The
    /// first sample's rates are those from [`Sample::default`], the
    /// router's start.
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
            .map(|p| PortRates {
                dev: p.dev,
                rx: port_rate(p.rx_element),
                tx: port_rate(p.tx_element),
                drops: cur.port_drops(p).saturating_sub(prev.port_drops(p)),
            })
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

    /// What the columns of [`Rates::render`] mean, for a newcomer: a few
    /// lines to print once.
    pub fn legend() -> &'static str {
        "Router rates each second, a row per port (k = thousand, M = million):\n  \
         in, out  packets/s and Mbit/s of the Ethernet frames received and sent\n  \
         drop     packets dropped on the port during that second (ring or queue\n           \
         full, no ARP reply, TTL expired, too big, bad options, not IPv4)\n  \
         core     packets/s each router worker (one per core) read from the ports\n"
    }

    /// The column headings of [`Rates::render`].
    pub fn header() -> String {
        row([
            "time",
            "port",
            "in pkt/s",
            "Mbit/s",
            "out pkt/s",
            "Mbit/s",
            "drop",
            "core",
            "pkt/s",
        ])
    }

    /// A row per port (and per worker, when there are more workers than
    /// ports), each ending in a newline; the first row shows the time.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let rows = self.ports.len().max(self.workers.len());
        for i in 0..rows {
            let time = if i == 0 {
                format!("{:.0} s", self.elapsed)
            } else {
                String::new()
            };
            let port = self.ports.get(i).map(|p| {
                [
                    p.dev.to_string(),
                    crate::runner::si(p.rx.pps),
                    format!("{:.2}", p.rx.bps / 1e6),
                    crate::runner::si(p.tx.pps),
                    format!("{:.2}", p.tx.bps / 1e6),
                    p.drops.to_string(),
                ]
            });
            let port = port.unwrap_or_default();
            let core = self
                .workers
                .get(i)
                .map(|r| [i.to_string(), crate::runner::si(r.pps)])
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "{}",
                row([
                    &time, &port[0], &port[1], &port[2], &port[3], &port[4], &port[5], &core[0],
                    &core[1],
                ])
            );
        }
        s
    }
}

/// The router's counters at the end, per port, summed over workers.
pub(crate) fn port_table(sample: &Sample, ports: &[Port]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "    {:<6} {:>11} {:>13} {:>11} {:>13} {:>8}",
        "port", "in packets", "in bytes", "out packets", "out bytes", "dropped"
    );
    for p in ports {
        let bytes = |name: &str| {
            sample
                .workers
                .iter()
                .map(|m| m.get(name).map_or(0, Element::bytes))
                .sum::<u64>()
        };
        let _ = writeln!(
            s,
            "    {:<6} {:>11} {:>13} {:>11} {:>13} {:>8}",
            p.dev,
            sample.total(p.rx_element, "count"),
            bytes(p.rx_element),
            sample.total(p.tx_element, "count"),
            bytes(p.tx_element),
            sample.port_drops(p)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::topology::PORTS;
    use super::*;

    /// A `--stats-json` line: worker 0 receives on eth0 and sends on eth1,
    /// where its queue dropped `q1_drops`; worker 1 receives on eth0 too.
    fn line(elapsed: f64, w0: (u64, u64), w1: (u64, u64), q1_drops: u64) -> String {
        format!(
            r#"{{"elapsed":{elapsed},"workers":[
                {{"worker":0,"elements":{{"in0":{{"class":"FromDevice","count":{},"bytes":{},"ring_drops":1}},
                  "out1":{{"class":"ToDevice","count":{},"bytes":{},"drops":2}},
                  "q1":{{"class":"Queue","drops":{q1_drops}}},
                  "CheckIPHeader@3":{{"class":"CheckIPHeader","drops":4}}}}}},
                {{"worker":1,"elements":{{"in0":{{"class":"FromDevice","count":{},"bytes":{}}},
                  "CheckIPHeader@3":{{"class":"CheckIPHeader","drops":5}}}}}}]}}"#,
            w0.0, w0.1, w0.0, w0.1, w1.0, w1.1
        )
        .replace('\n', "")
    }

    #[test]
    fn parses_a_stats_line_and_sums_workers() {
        let s = Sample::parse(&line(2.0, (10, 1000), (5, 500), 3)).unwrap();
        assert_eq!(s.elapsed, 2.0);
        assert_eq!(s.workers.len(), 2);
        assert_eq!(s.total("in0", "count"), 15);
        assert_eq!(s.on_worker(1, "in0", "bytes"), 500);
        assert_eq!(s.total("nothing", "count"), 0);
        assert_eq!(s.class_total("CheckIPHeader", "drops"), 9);
        // eth0: in0's ring drops; eth1: q1's and out1's drops.
        assert_eq!(s.port_drops(&PORTS[0]), 1);
        assert_eq!(s.port_drops(&PORTS[1]), 5);
        assert_eq!(Sample::parse("error: something"), None);
        assert_eq!(Sample::parse("{\"x\":1}"), None);
    }

    #[test]
    fn rates_per_port_and_core() {
        let a = Sample::parse(&line(1.0, (10, 1000), (5, 500), 3)).unwrap();
        let b = Sample::parse(&line(3.0, (30, 3000), (5, 500), 10)).unwrap();
        let r = Rates::between(&a, &b, &PORTS).unwrap();
        assert_eq!(r.ports[0].dev, "eth0");
        assert_eq!(r.ports[0].rx.pps, 10.0);
        assert_eq!(r.ports[0].rx.bps, 8000.0);
        assert_eq!(r.ports[0].drops, 0);
        assert_eq!(r.ports[1].tx.pps, 10.0);
        assert_eq!(r.ports[1].drops, 7);
        assert_eq!(r.workers[0].pps, 10.0);
        assert_eq!(r.workers[1].pps, 0.0);
        assert!(Rates::between(&a, &a, &PORTS).is_none());
        let table = port_table(&b, &PORTS);
        assert!(table.contains("eth1"), "{table}");
        assert!(table.lines().nth(2).unwrap().ends_with(" 12"), "{table}");
    }

    #[test]
    fn the_first_sample_counts_from_the_start() {
        let first = Sample::parse(&line(1.0, (10, 1000), (5, 500), 3)).unwrap();
        let r = Rates::between(&Sample::default(), &first, &PORTS).unwrap();
        assert_eq!(r.ports[0].rx.pps, 15.0);
        assert_eq!(r.ports[1].drops, 5);
    }

    #[test]
    fn rows_line_up_under_the_header_within_80_columns() {
        let a = Sample::parse(&line(1.0, (10, 1000), (5, 500), 3)).unwrap();
        let b = Sample::parse(&line(2.0, (12_010, 18_001_000), (5, 500), 10)).unwrap();
        let text = Rates::between(&a, &b, &PORTS).unwrap().render();
        let header = Rates::header();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert_eq!(
            rows[0].split_whitespace().collect::<Vec<_>>(),
            ["2", "s", "eth0", "12.0k", "144.00", "0", "0.00", "0", "|", "0", "12.0k"],
            "{text}"
        );
        assert_eq!(
            rows[1].split_whitespace().collect::<Vec<_>>(),
            ["eth1", "0", "0.00", "12.0k", "144.00", "7", "|", "1", "0"],
            "{text}"
        );
        // Each number ends where its heading does.
        for heading in ["in pkt/s", "out pkt/s", "drop", "pkt/s"] {
            let end = header.rfind(heading).unwrap() + heading.len();
            assert!(
                rows.iter()
                    .all(|r| r.len() >= end && r.as_bytes()[end - 1] != b' '),
                "`{heading}` does not line up:\n{header}\n{text}"
            );
        }
        for l in Rates::legend().lines().chain([header.as_str()]).chain(rows) {
            assert!(l.len() <= 80, "longer than 80 columns: {l}");
        }
    }
}
