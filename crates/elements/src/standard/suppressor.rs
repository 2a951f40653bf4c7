//! `Suppressor`: passes input i to output i unless port i is suppressed
//! (Click's `elements/standard/suppressor.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Manual, PortInfo, Stats,
};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// The `Suppressor` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Suppressor",
    ports: "-/-",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "passes packets unchanged, optionally dropping some ports",
    synopsis: "Suppressor",
    description: "Has as many outputs as inputs and passes packets from input i to output \
        i unchanged. Any port can be suppressed with its `activeI` write handler (Click's name; `active_I` also works) \
        (`bricks ctl write NAME.active1 false`): packets pushed into a suppressed input \
        are dropped and counted, and pulls from a suppressed output return nothing. Every \
        port starts active; writing `reset` makes them all active again. The `activeI` \
        counters read 1 for an active port and 0 for a suppressed one. The ports' states \
        are shared by every worker, and an EtherSpanTree naming the element suppresses \
        and allows its ports (Click's `suppress` and `allow`).",
    ports: "any number of inputs, as many outputs; agnostic (input i like output i)",
    keywords: &[],
    counters: &[
        ("activeN", "1 if port N passes packets, 0 if suppressed (write to change)"),
        ("drops", "packets pushed into suppressed ports, dropped"),
    ],
    example: "s :: Suppressor; InfiniteSource(LIMIT 2) -> [0]s[0] -> Discard; \
        InfiniteSource(LIMIT 2) -> [1]s[1] -> Discard;",
    see_also: &["Switch"],
};

/// Most ports a Suppressor may have (Click's `fd_set` holds 1024).
const MAX_PORTS: usize = 1024;

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let n = ports.ninputs();
    if ports.noutputs() != n {
        return Err(ArgError::new(format!(
            "Suppressor has {n} input{} and {} output{}; it needs as many outputs as inputs",
            if n == 1 { "" } else { "s" },
            ports.noutputs(),
            if ports.noutputs() == 1 { "" } else { "s" }
        )));
    }
    if n > MAX_PORTS {
        return Err(ArgError::new(format!(
            "Suppressor has {n} ports; at most {MAX_PORTS}"
        )));
    }
    Ok(Box::new(Suppressor {
        active: args.shared(|_| Ok(Ports::new(n)))?,
        drops: 0,
    }))
}

/// Which ports pass packets: shared by every worker's instance, and
/// reached by an EtherSpanTree that names the element.
#[derive(Debug)]
pub(crate) struct Ports(Box<[AtomicBool]>);

impl Ports {
    /// `n` active ports.
    pub(crate) fn new(n: usize) -> Ports {
        Ports((0..n).map(|_| AtomicBool::new(true)).collect())
    }

    /// How many ports there are.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Makes port `port` pass packets (Click's `allow`) or drop them
    /// (`suppress`).
    pub(crate) fn set(&self, port: usize, active: bool) {
        if let Some(a) = self.0.get(port) {
            a.store(active, Relaxed);
        }
    }

    /// Whether port `port` passes packets.
    #[inline]
    pub(crate) fn is_active(&self, port: usize) -> bool {
        self.0.get(port).is_some_and(|a| a.load(Relaxed))
    }
}

/// Passes packets port to port unless the port is suppressed.
#[derive(Debug)]
pub struct Suppressor {
    active: Arc<Ports>,
    drops: u64,
}

impl Suppressor {
    #[inline]
    fn is_active(&self, port: usize) -> bool {
        self.active.is_active(port)
    }
}

impl Element for Suppressor {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if self.is_active(port) {
            cx.push(port, batch);
        } else {
            self.drops += batch.len() as u64;
            batch.clear();
        }
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if self.is_active(port) {
            cx.pull(port, out, max);
        }
    }

    fn stats(&self, s: &mut Stats) {
        for i in 0..self.active.len() {
            s.counter(format!("active{i}"), u64::from(self.is_active(i)));
        }
        s.counter("drops", self.drops);
    }

    /// Click's `activeN` read handler: `true` or `false` (the counter of
    /// the same name reads 1 or 0 for `bricks ctl stats`).
    fn read_handler(&self, handler: &str) -> Option<String> {
        let port: usize = handler
            .strip_prefix("active")?
            .trim_start_matches('_')
            .parse()
            .ok()?;
        (port < self.active.len()).then(|| self.is_active(port).to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        if handler == "reset" {
            for i in 0..self.active.len() {
                self.active.set(i, true);
            }
            return Ok(());
        }
        // Click names them active0, active1, ...; bricks also takes active_0.
        let port = handler
            .strip_prefix("active")
            .map(|n| n.strip_prefix('_').unwrap_or(n))
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n < self.active.len());
        match port {
            Some(i) => {
                self.active.set(i, bool::from_arg(value.trim())?);
                Ok(())
            }
            None => Err(format!(
                "no write handler `{handler}` (Suppressor has active0 to active{} and reset)",
                self.active.len().saturating_sub(1)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    /// A minimal IPv4/UDP frame, tagged in its last byte.
    fn udp(tag: u8) -> Packet {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 29, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend([0x04, 0xd2, 0x16, 0x2e, 0, 9, 0, 0, tag]);
        Packet::from_slice(&f).unwrap()
    }

    #[test]
    fn suppressed_push_port_drops() {
        let mut h = Harness::push(&CLASS, "", 2, 2);
        h.push_packets(0, [udp(1)]);
        h.push_packets(1, [udp(2)]);
        assert_eq!(h.take_bytes(0)[0][42], 1);
        assert_eq!(h.take_bytes(1)[0][42], 2);
        h.write_handler("active1", "false").unwrap();
        assert_eq!(h.stats().get("active1"), Some(0));
        h.push_packets(1, [udp(3), udp(4)]);
        h.push_packets(0, [udp(5)]);
        assert!(h.take_bytes(1).is_empty());
        assert_eq!(h.take_bytes(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(2));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("active1"), Some(1));
        h.push_packets(1, [udp(6)]);
        assert_eq!(h.take_bytes(1).len(), 1);
    }

    #[test]
    fn suppressed_pull_port_returns_nothing() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "", ports);
        h.feed(0, [udp(1), udp(2)]);
        h.write_handler("active_0", "false").unwrap();
        assert!(h.pull(0, 8).is_empty());
        h.write_handler("active_0", "true").unwrap();
        assert_eq!(h.pull(0, 8).len(), 2);
    }

    #[test]
    fn outputs_must_match_inputs() {
        let ports = PortInfo {
            inputs: vec![Processing::Push; 2],
            outputs: vec![Processing::Push],
        };
        let e = bricks_runtime::testing::make_element(&CLASS, "", &ports).unwrap_err();
        assert!(e.contains("as many outputs as inputs"), "{e}");
    }

    #[test]
    fn bad_handlers_refused() {
        let h = Harness::push(&CLASS, "", 1, 1);
        assert!(h.write_handler("active1", "true").is_err());
        assert!(h.write_handler("active_0", "maybe").is_err());
        assert!(h.write_handler("activex", "true").is_err());
    }
}
