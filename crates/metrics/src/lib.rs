//! A running router's counters as Prometheus metrics.
//!
//! [`encode`] turns what every worker last published (its elements'
//! counters, [`bricks_runtime::ElementStats`]) into the OpenMetrics text
//! format through the `prometheus-client` crate, with the names and labels
//! Prometheus' conventions expect: counters end in `_total`, units are in
//! the names (`_bytes`, `_seconds`), and `worker`, `element`, `class` and
//! `interface` are labels. [`serve`] answers `GET /metrics` on a TCP
//! address (`bricks run --metrics 127.0.0.1:9100`).
//!
//! What each element counter becomes:
//!
//! | counter | metric |
//! |---|---|
//! | `count` | `bricks_element_packets_total` |
//! | `byte_count` | `bricks_element_bytes_total` |
//! | `drops`, `*_drops` | `bricks_element_drops_total{reason}` |
//! | `length` | `bricks_queue_length` (gauge) |
//! | `highwater_length` | `bricks_queue_highwater_length` (gauge) |
//! | `routes` | `bricks_route_table_routes` (gauge) |
//! | `memory` | `bricks_route_table_memory_bytes` (gauge) |
//! | `route_updates_set`, `route_updates_removed` | `bricks_route_updates_total{change}` |
//! | `route_updates_*`, `route_messages_*` (skips) | `bricks_route_messages_skipped_total{reason}` |
//! | `rate_*` | `bricks_element_rate{counter}` (gauge) |
//! | anything else | `bricks_element_events_total{counter}` |
//!
//! and for the interfaces (`FromDevice`, `PollDevice`, `ToDevice`, by
//! their DEVNAME): `bricks_interface_receive_packets_total`,
//! `bricks_interface_transmit_packets_total`,
//! `bricks_interface_transmit_drops_total`,
//! `bricks_interface_receive_oversized_total`; per worker:
//! `bricks_worker_receive_packets_total` (what its device elements read).

#![forbid(unsafe_code)]

mod http;

pub use http::{serve, Limits, Server};

use bricks_runtime::ElementStats;
use prometheus_client::encoding::text::encode as encode_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Label pairs, in the order they are printed.
type Labels = Vec<(&'static str, String)>;

/// What the metrics know of the router besides its counters.
#[derive(Debug, Clone, Default)]
pub struct RouterInfo {
    /// The interface (DEVNAME) of each device element, by element name.
    pub interfaces: HashMap<String, String>,
}

/// The classes whose `count` is packets received from an interface.
const RECEIVERS: [&str; 2] = ["FromDevice", "PollDevice"];

/// The metrics for the counters `per_worker` (one list per worker, as
/// `bricks_runtime::Control::live` returns them), after `uptime`, in the
/// OpenMetrics text format.
pub fn encode(per_worker: &[Vec<ElementStats>], info: &RouterInfo, uptime: Duration) -> String {
    let mut reg = Registry::with_prefix("bricks");
    let packets = Family::<Labels, Counter>::default();
    let bytes = Family::<Labels, Counter>::default();
    let drops = Family::<Labels, Counter>::default();
    let events = Family::<Labels, Counter>::default();
    let qlen = Family::<Labels, Gauge>::default();
    let qhigh = Family::<Labels, Gauge>::default();
    let routes = Family::<Labels, Gauge>::default();
    let memory = Family::<Labels, Gauge>::default();
    let rates = Family::<Labels, Gauge>::default();
    let route_updates = Family::<Labels, Counter>::default();
    let route_skipped = Family::<Labels, Counter>::default();
    let if_rx = Family::<Labels, Counter>::default();
    let if_tx = Family::<Labels, Counter>::default();
    let if_tx_drops = Family::<Labels, Counter>::default();
    let if_oversized = Family::<Labels, Counter>::default();
    let worker_rx = Family::<Labels, Counter>::default();
    let up = Gauge::<f64, AtomicU64>::default();
    up.set(uptime.as_secs_f64());

    for (w, elements) in per_worker.iter().enumerate() {
        let worker = w.to_string();
        worker_rx
            .get_or_create(&vec![("worker", worker.clone())])
            .inc_by(0);
        for e in elements {
            let base: Labels = vec![
                ("element", e.name.clone()),
                ("class", e.class.to_string()),
                ("worker", worker.clone()),
            ];
            let with = |k: &'static str, v: &str| {
                let mut l = base.clone();
                l.push((k, v.to_string()));
                l
            };
            let interface = info.interfaces.get(&e.name);
            for (name, v) in e.stats.entries() {
                let v = *v;
                match name.as_ref() {
                    "count" => {
                        packets.get_or_create(&base).inc_by(v);
                    }
                    "byte_count" => {
                        bytes.get_or_create(&base).inc_by(v);
                    }
                    "length" => {
                        qlen.get_or_create(&base).set(gauge(v));
                    }
                    "highwater_length" => {
                        qhigh.get_or_create(&base).set(gauge(v));
                    }
                    "routes" => {
                        routes.get_or_create(&base).set(gauge(v));
                    }
                    "memory" => {
                        memory.get_or_create(&base).set(gauge(v));
                    }
                    "route_updates_set" => {
                        route_updates
                            .get_or_create(&with("change", "set"))
                            .inc_by(v);
                    }
                    "route_updates_removed" => {
                        route_updates
                            .get_or_create(&with("change", "removed"))
                            .inc_by(v);
                    }
                    n if n.starts_with("route_updates_") || n.starts_with("route_messages_") => {
                        let reason = n
                            .trim_start_matches("route_updates_")
                            .trim_start_matches("route_messages_");
                        route_skipped
                            .get_or_create(&with("reason", reason))
                            .inc_by(v);
                    }
                    n if n.starts_with("rate") => {
                        rates.get_or_create(&with("counter", n)).set(gauge(v));
                    }
                    n if n == "drops" || n.ends_with("_drops") => {
                        drops.get_or_create(&with("reason", n)).inc_by(v);
                    }
                    n => {
                        events.get_or_create(&with("counter", n)).inc_by(v);
                    }
                }
            }
            let Some(dev) = interface else { continue };
            let l: Labels = vec![("interface", dev.clone()), ("worker", worker.clone())];
            let count = e.stats.get("count").unwrap_or(0);
            if RECEIVERS.contains(&e.class) {
                if_rx.get_or_create(&l).inc_by(count);
                if_oversized
                    .get_or_create(&l)
                    .inc_by(e.stats.get("oversized").unwrap_or(0));
                worker_rx
                    .get_or_create(&vec![("worker", worker.clone())])
                    .inc_by(count);
            } else {
                if_tx.get_or_create(&l).inc_by(count);
                if_tx_drops
                    .get_or_create(&l)
                    .inc_by(e.stats.get("drops").unwrap_or(0));
            }
        }
    }

    reg.register_with_unit("uptime", "Time since the router started", Unit::Seconds, up);
    reg.register(
        "element_packets",
        "Packets an element counted (its `count`)",
        packets,
    );
    reg.register_with_unit(
        "element",
        "Bytes an element counted (its `byte_count`)",
        Unit::Bytes,
        bytes,
    );
    reg.register(
        "element_drops",
        "Packets an element dropped, by reason (its `drops` and `*_drops` counters)",
        drops,
    );
    reg.register(
        "element_events",
        "Any other counter of an element, by its name",
        events,
    );
    reg.register(
        "element_rate",
        "A rate an element measures (its `rate_*` counters: per second, in the unit the name says)",
        rates,
    );
    reg.register("queue_length", "Packets in a queue", qlen);
    reg.register(
        "queue_highwater_length",
        "The most packets a queue has held",
        qhigh,
    );
    reg.register(
        "route_updates",
        "Route changes a live source (netlink, FPM) applied to a lookup element's table, by change",
        route_updates,
    );
    reg.register(
        "route_messages_skipped",
        "Route messages or changes a live source skipped, by reason (filtered: other tables, \
         protocols or families; malformed, unknown_type, unknown_interface, unsupported, \
         over_limit, refused)",
        route_skipped,
    );
    reg.register(
        "route_table_routes",
        "Routes in a lookup element's table",
        routes,
    );
    reg.register_with_unit(
        "route_table_memory",
        "Memory of a lookup element's table",
        Unit::Bytes,
        memory,
    );
    reg.register(
        "interface_receive_packets",
        "Packets read from an interface",
        if_rx,
    );
    reg.register(
        "interface_receive_oversized",
        "Frames read from an interface that were too long for a packet buffer",
        if_oversized,
    );
    reg.register(
        "interface_transmit_packets",
        "Packets sent on an interface",
        if_tx,
    );
    reg.register(
        "interface_transmit_drops",
        "Packets that could not be sent on an interface",
        if_tx_drops,
    );
    reg.register(
        "worker_receive_packets",
        "Packets a worker read from its interfaces",
        worker_rx,
    );
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode_text(&mut out, &reg);
    out
}

/// A counter that is a level (a queue's length) as a gauge value.
fn gauge(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Stats;

    fn el(name: &str, class: &'static str, counters: &[(&'static str, u64)]) -> ElementStats {
        let mut stats = Stats::default();
        for &(k, v) in counters {
            stats.counter(k, v);
        }
        ElementStats {
            name: name.into(),
            class,
            stats,
        }
    }

    #[test]
    fn live_route_sources_have_their_own_metrics() {
        let w0 = vec![el(
            "rt",
            "DirectIPLookup",
            &[
                ("routes", 21),
                ("route_messages", 40),
                ("route_updates_set", 25),
                ("route_updates_removed", 4),
                ("route_updates_unknown_interface", 2),
                ("route_messages_filtered", 9),
            ],
        )];
        let text = encode(&[w0], &RouterInfo::default(), Duration::from_secs(1));
        let has = |needle: &str| {
            assert!(text.contains(needle), "no `{needle}` in:\n{text}");
        };
        has(
            r#"bricks_route_updates_total{element="rt",class="DirectIPLookup",worker="0",change="set"} 25"#,
        );
        has(
            r#"bricks_route_updates_total{element="rt",class="DirectIPLookup",worker="0",change="removed"} 4"#,
        );
        has(
            r#"bricks_route_messages_skipped_total{element="rt",class="DirectIPLookup",worker="0",reason="unknown_interface"} 2"#,
        );
        has(
            r#"bricks_route_messages_skipped_total{element="rt",class="DirectIPLookup",worker="0",reason="filtered"} 9"#,
        );
        has(r#"bricks_route_table_routes{element="rt",class="DirectIPLookup",worker="0"} 21"#);
    }

    #[test]
    fn counters_become_metrics_with_prometheus_names_and_labels() {
        let w0 = vec![
            el("in", "FromDevice", &[("count", 10), ("oversized", 1)]),
            el(
                "c",
                "Counter",
                &[("count", 7), ("byte_count", 420), ("rate_pps", 3)],
            ),
            el(
                "q",
                "Queue",
                &[("length", 3), ("highwater_length", 9), ("drops", 2)],
            ),
            el(
                "rt",
                "DirectIPLookup",
                &[("no_route", 4), ("routes", 100), ("memory", 4096)],
            ),
            el("out", "ToDevice", &[("count", 6), ("drops", 1)]),
        ];
        let w1 = vec![el("in", "FromDevice", &[("count", 5)])];
        let info = RouterInfo {
            interfaces: [("in".into(), "eth0".into()), ("out".into(), "eth1".into())].into(),
        };
        let text = encode(&[w0, w1], &info, Duration::from_secs(2));
        for line in [
            "bricks_uptime_seconds 2.0",
            "bricks_element_packets_total{element=\"c\",class=\"Counter\",worker=\"0\"} 7",
            "bricks_element_bytes_total{element=\"c\",class=\"Counter\",worker=\"0\"} 420",
            "bricks_element_drops_total{element=\"q\",class=\"Queue\",worker=\"0\",reason=\"drops\"} 2",
            "bricks_queue_length{element=\"q\",class=\"Queue\",worker=\"0\"} 3",
            "bricks_element_rate{element=\"c\",class=\"Counter\",worker=\"0\",counter=\"rate_pps\"} 3",
            "bricks_queue_highwater_length{element=\"q\",class=\"Queue\",worker=\"0\"} 9",
            "bricks_route_table_routes{element=\"rt\",class=\"DirectIPLookup\",worker=\"0\"} 100",
            "bricks_route_table_memory_bytes{element=\"rt\",class=\"DirectIPLookup\",worker=\"0\"} 4096",
            "bricks_element_events_total{element=\"rt\",class=\"DirectIPLookup\",worker=\"0\",counter=\"no_route\"} 4",
            "bricks_interface_receive_packets_total{interface=\"eth0\",worker=\"0\"} 10",
            "bricks_interface_receive_packets_total{interface=\"eth0\",worker=\"1\"} 5",
            "bricks_interface_receive_oversized_total{interface=\"eth0\",worker=\"0\"} 1",
            "bricks_interface_transmit_packets_total{interface=\"eth1\",worker=\"0\"} 6",
            "bricks_interface_transmit_drops_total{interface=\"eth1\",worker=\"0\"} 1",
            "bricks_worker_receive_packets_total{worker=\"0\"} 10",
            "bricks_worker_receive_packets_total{worker=\"1\"} 5",
            "# TYPE bricks_element_packets counter",
            "# TYPE bricks_queue_length gauge",
            "# UNIT bricks_route_table_memory_bytes bytes",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\nnot in\n{text}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        let w = vec![el("a\"b\\c", "Counter", &[("count", 1)])];
        let text = encode(&[w], &RouterInfo::default(), Duration::ZERO);
        assert!(text.contains("element=\"a\\\"b\\\\c\""), "{text}");
    }
}
