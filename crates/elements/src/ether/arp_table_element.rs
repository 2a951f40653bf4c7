//! `ARPTable`: an ARP table on its own, for `ARPQuerier(TABLE t, ...)`
//! (Click's `elements/ethernet/arptable.cc`). Several queriers naming one
//! table share its entries (an interface with two querier elements, or a
//! table filled by hand with `insert`); each querier keeps the packets it
//! holds itself.

use super::arp_table::{ArpTable, Limits, Neighbours, MAX_ENTRY_CAPACITY};
use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_packet::Timestamp;
use bricks_wire::ethernet::EthernetAddress;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

/// The `ARPTable` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ARPTable",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "an ARP table that ARPQueriers share",
    synopsis: "ARPTable([KEYWORDS CAPACITY, ENTRY_CAPACITY, ENTRY_PACKET_CAPACITY, \
        CAPACITY_SLIM_FACTOR, TIMEOUT])",
    description: "An information element (no ports) holding IPv4 to Ethernet mappings \
        that every ARPQuerier naming it with TABLE uses, with its limits: the queriers' \
        own CAPACITY, ENTRY_CAPACITY and TIMEOUT keywords then do nothing, as in Click. \
        The entries follow ARPQuerier's rules (bounded, Pending entries evicted first, \
        static entries from `insert ... static`). Handlers: `table` (read, Click's `IP OK \
        ETH AGE` lines, oldest first), `insert IP ETH` (as if learnt now: it expires after \
        TIMEOUT, as in Click), `insert IP ETH static` (never expires; bricks), `delete \
        IP`, `clear` (write). Packets \
        waiting for an address stay with the querier that holds them.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "CAPACITY",
            ty: "unsigned",
            default: Some("2048"),
            doc: "most packets each querier holds while addresses are resolved; 0 for no \
                limit",
        },
        Keyword {
            name: "ENTRY_CAPACITY",
            ty: "unsigned",
            default: Some("4096"),
            doc: "most entries, 1 to 1048576 (Click's 0, no limit, is refused)",
        },
        Keyword {
            name: "ENTRY_PACKET_CAPACITY",
            ty: "unsigned",
            default: Some("0"),
            doc: "most packets held for one address; 0 for no limit",
        },
        Keyword {
            name: "CAPACITY_SLIM_FACTOR",
            ty: "unsigned",
            default: Some("2"),
            doc: "over CAPACITY, drop until CAPACITY - CAPACITY/CAPACITY_SLIM_FACTOR wait",
        },
        Keyword {
            name: "TIMEOUT",
            ty: "duration",
            default: Some("5min"),
            doc: "lifetime of a learnt entry; 0 for forever",
        },
    ],
    counters: &[("count", "entries, Pending ones included")],
    example: "arpt :: ARPTable(TIMEOUT 1min); \
        FromDevice(eth0) -> c :: Classifier(12/0806 20/0002, -); \
        c[0] -> [1]q :: ARPQuerier(TABLE arpt, 10.0.0.1/24, 52:54:00:aa:00:01) -> Discard; \
        c[1] -> Strip(14) -> CheckIPHeader -> q;",
    see_also: &["ARPQuerier"],
};

/// What an ARPTable shares with the ARPQueriers that name it.
#[derive(Debug)]
pub struct SharedArpTable {
    /// The entries.
    pub neighbours: Arc<Neighbours>,
    /// The limits every querier of the table applies.
    pub limits: Limits,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // Every instance reads its arguments; the first one's make the table.
    let d = Limits::default();
    let capacity: usize = args.read("CAPACITY")?.unwrap_or(d.capacity);
    let entry_capacity: usize = args.read("ENTRY_CAPACITY")?.unwrap_or(d.entry_capacity);
    if entry_capacity == 0 || entry_capacity > MAX_ENTRY_CAPACITY {
        return Err(ArgError::new(format!(
            "ENTRY_CAPACITY must be 1 to {MAX_ENTRY_CAPACITY}, not {entry_capacity}"
        )));
    }
    let entry_packet_capacity: usize = args.read("ENTRY_PACKET_CAPACITY")?.unwrap_or(0);
    let slim_factor: usize = args.read("CAPACITY_SLIM_FACTOR")?.unwrap_or(d.slim_factor);
    if slim_factor == 0 {
        return Err(ArgError::new("CAPACITY_SLIM_FACTOR cannot be zero"));
    }
    let timeout: Option<Duration> = args.read("TIMEOUT")?;
    let limits = Limits {
        capacity,
        entry_capacity,
        entry_packet_capacity,
        slim_factor,
        timeout: timeout.map_or(d.timeout, |t| {
            u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
        }),
        ..d
    };
    let shared = args.shared(|_| {
        Ok(SharedArpTable {
            neighbours: Arc::new(Neighbours::new(entry_capacity, limits.query_rate)),
            limits,
        })
    })?;
    let view = ArpTable::with_neighbours(shared.limits, Arc::clone(&shared.neighbours));
    Ok(Box::new(ArpTableElement {
        view,
        now: Timestamp(0),
        first_worker: true,
    }))
}

/// The element: a view of the shared entries for the handlers.
pub struct ArpTableElement {
    view: ArpTable,
    /// The clock as of the last handler call that had a context.
    now: Timestamp,
    first_worker: bool,
}

impl core::fmt::Debug for ArpTableElement {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ArpTableElement")
            .field("entries", &self.view.len())
            .finish()
    }
}

impl Element for ArpTableElement {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.first_worker = cx.worker() == 0;
        self.now = cx.now();
    }

    fn stats(&self, s: &mut Stats) {
        // Shared entries, counted once.
        if self.first_worker {
            s.counter("count", self.view.len() as u64);
        }
    }

    /// Handlers run with the time now where the caller has it: an
    /// `insert` is stamped with it and `table` shows ages as of it.
    fn call_handler(
        &mut self,
        handler: &str,
        _value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        self.now = cx.now();
        (!write && handler == "table").then(|| Ok(self.view.text(self.now.0)))
    }

    /// The entries are shared: one worker's instance changes them.
    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "insert" | "delete" | "clear")
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let words: Vec<&str> = value.split_ascii_whitespace().collect();
        let ip = |w: &str| Ipv4Addr::from_arg(w).map_err(|e| format!("expected IPv4 address, {e}"));
        match (handler, words.as_slice()) {
            ("insert", _) => self.view.insert_handler(value, self.now.0, |eth| {
                if eth.is_unicast() && eth != EthernetAddress::UNSPECIFIED {
                    Ok(())
                } else {
                    Err(format!(
                        "{eth} cannot be a neighbour's address: give a unicast address, not \
                         all-zero"
                    ))
                }
            }),
            ("delete", [i]) => {
                let a = ip(i)?;
                if self.view.remove(a) {
                    Ok(())
                } else {
                    Err(format!("no ARP entry for {a}"))
                }
            }
            ("delete", _) => Err("expected `IP`".into()),
            ("clear", _) => {
                self.view.clear();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (insert, delete, clear)"
            )),
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "table").then(|| self.view.text(self.now.0))
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 4] = [
            Handler::r("table"),
            Handler::w("insert"),
            Handler::w("delete"),
            Handler::w("clear"),
        ];
        &HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ether::arp_querier;
    use bricks_runtime::testing::make_element;

    #[test]
    fn arguments() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "", &ports).is_ok());
        assert!(make_element(&CLASS, "TIMEOUT 0.1s, ENTRY_CAPACITY 10", &ports).is_ok());
        assert!(make_element(&CLASS, "ENTRY_CAPACITY 0", &ports).is_err());
        assert!(make_element(&CLASS, "FOO 1", &ports).is_err());
    }

    #[test]
    fn a_querier_without_the_table_named_is_refused() {
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push; 2],
            outputs: vec![bricks_element::Processing::Push; 2],
        };
        let err = make_element(
            &arp_querier::CLASS,
            "TABLE t, 10.0.0.1/24, 52:54:00:aa:00:01",
            &ports,
        )
        .unwrap_err();
        assert!(err.contains("TABLE"), "{err}");
    }
}
