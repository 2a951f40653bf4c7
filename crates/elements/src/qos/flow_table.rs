//! `FlowTable`: the table of reserved flows (Hardekopf et al. §3), an
//! information element that `TagClassifier`, `HashClassifier`,
//! `FlowLookup` and `VirtualClock` name with `TABLE`. One table is shared
//! by every worker; the control plane fills and empties it while traffic
//! flows. The structure and its synchronisation are in
//! [`bricks_qos::flow`], the flow syntax in [`bricks_qos::file`].

use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo, Stats};
use bricks_qos::file::{parse_flow, parse_flows, parse_key};
use bricks_qos::flow::{self, FlowTable as Table, Mode, MAX_CAPACITY, MAX_K};
use std::path::PathBuf;
use std::sync::Arc;

/// The `FlowTable` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FlowTable",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "holds the reserved flows that QoS classifiers look packets up in",
    synopsis:
        "FlowTable([MODE tag|match, CAPACITY n, K k, BUCKETS b, FILE path, FLOW line..., SEED s])",
    description: "An information element (no ports) owning a flow table shared by every \
        worker: each flow's key, reserved rate, next hop and output port (for route selection \
        \"look\"), and its meters (packets, bytes, last Virtual Clock deadline), updated \
        without locks by the elements that name the table with TABLE.\
        \n\nMODE tag: a direct array of CAPACITY records indexed by the flow ID the packet \
        carries (TagClassifier); a flow ID at or beyond CAPACITY is refused (rejected_full). \
        MODE match: a hash table of 5-tuples (HashClassifier) with BUCKETS chains of at most \
        K records; a new flow hashed onto a bucket that already holds K is refused \
        (rejected_chain), and one beyond CAPACITY flows too (rejected_full). A lookup reads \
        at most K records.\
        \n\nFlows come from FILE (read when the configuration is checked: one flow a line, \
        `#` comments; a bad line, a duplicate key or a rate of 0 or above 1 Tbit/s is an \
        error naming the line), from FLOW arguments, and from the write handlers while \
        traffic flows. A flow is `KEY rate RATE [via ADDR] [output N]`, KEY being `tag N` or \
        `PROTO SRC[:PORT] DST[:PORT]` (PROTO tcp, udp, icmp, sctp, udplite or `proto N`); \
        RATE in bit/s with an optional k, M, G or T (`64k`, `2.5M`).\
        \n\nReaders take no lock: tag records are published by a release store of their live \
        bit, match buckets carry a sequence number (seqlock) that a reader checks after its \
        walk. The writers (handlers, on one worker) share a mutex.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "MODE",
            ty: "tag or match",
            default: Some("tag"),
            doc: "direct array by flow ID, or hash table of 5-tuples",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (1 to 4194304)",
            default: Some("1024"),
            doc: "records: the flow IDs 0 to CAPACITY-1 (tag), the most flows (match)",
        },
        Keyword {
            name: "K",
            ty: "unsigned (1 to 64)",
            default: Some("4"),
            doc: "match: the longest chain; a flow hashed onto a bucket holding K is refused",
        },
        Keyword {
            name: "BUCKETS",
            ty: "unsigned",
            default: Some("CAPACITY rounded up to a power of two"),
            doc: "match: the number of chains",
        },
        Keyword {
            name: "FILE",
            ty: "file name",
            default: None,
            doc: "a flow file, read when the configuration is checked",
        },
        Keyword {
            name: "FLOW",
            ty: "flow (repeatable)",
            default: None,
            doc: "a flow, in the syntax of a line of the file",
        },
        Keyword {
            name: "SEED",
            ty: "unsigned",
            default: Some("random"),
            doc: "match: the hash key (fix it to make bucket placement repeatable)",
        },
    ],
    counters: &[
        ("flows", "flows in the table now"),
        ("adds", "flows added"),
        ("removes", "flows removed"),
        (
            "rejected_full",
            "flows refused: the table full, or a tag beyond CAPACITY",
        ),
        (
            "rejected_chain",
            "flows refused: their bucket already held K (match)",
        ),
        (
            "slow_lookups",
            "lookups that met a writer on 1024 walks and waited for it (match)",
        ),
    ],
    example:
        "ft :: FlowTable(MODE tag, CAPACITY 256, FLOW tag 17 rate 64k via 10.0.0.2 output 0);\n\
        InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 11 ff \
        45 00 00 14 00 03 00 00 ff 11 a4 e8 0a 01 02 01 0a 22 00 01>, LIMIT 4) \
        -> tc :: TagClassifier(ft) -> Discard;\ntc[1] -> Discard;\n\
        // bricks ctl SOCKET write ft.add tag 18 rate 2M output 1\n// bricks ctl SOCKET write ft.remove tag 17",
    see_also: &[
        "TagClassifier",
        "HashClassifier",
        "FlowLookup",
        "VirtualClock",
    ],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let table = args.shared(|a| {
        let mode = match a.read::<String>("MODE")?.as_deref() {
            None | Some("tag") => Mode::Tag,
            Some("match") => Mode::Match,
            Some(m) => {
                return Err(ArgError::new(format!(
                    "bad argument MODE: expected tag or match, found `{m}`"
                )))
            }
        };
        let capacity: u32 = a.read("CAPACITY")?.unwrap_or(1024);
        if capacity == 0 || capacity > MAX_CAPACITY {
            return Err(ArgError::new(format!(
                "CAPACITY {capacity} out of range (1 to {MAX_CAPACITY})"
            )));
        }
        let k: u32 = a.read("K")?.unwrap_or(4);
        if k == 0 || k > MAX_K {
            return Err(ArgError::new(format!("K {k} out of range (1 to {MAX_K})")));
        }
        let buckets: Option<u32> = a.read("BUCKETS")?;
        if buckets.is_some_and(|b| b == 0 || b > MAX_CAPACITY) {
            return Err(ArgError::new(format!(
                "BUCKETS out of range (1 to {MAX_CAPACITY})"
            )));
        }
        let seed: Option<u64> = a.read("SEED")?;
        if mode == Mode::Tag && (buckets.is_some() || a.read::<u32>("K")?.is_some()) {
            return Err(ArgError::new("K and BUCKETS apply to MODE match only"));
        }
        let file: Option<PathBuf> = a.read("FILE")?;
        let lines: Vec<String> = a.read_all("FLOW")?;
        let table = match mode {
            Mode::Tag => Table::tag(capacity),
            Mode::Match => Table::matching(
                capacity,
                k,
                buckets.unwrap_or(0),
                seed.unwrap_or_else(random_seed),
            ),
        };
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ArgError::new(format!("FILE {}: {e}", path.display())))?;
            let flows = parse_flows(&text)
                .map_err(|e| ArgError::new(format!("FILE {}: {e}", path.display())))?;
            for (line, f) in flows.iter().enumerate() {
                // Lines are counted without blanks and comments here: name
                // the flow itself.
                let _ = line;
                table
                    .add(f)
                    .map_err(|e| ArgError::new(format!("FILE {}: {e}", path.display())))?;
            }
        }
        for l in &lines {
            let f = parse_flow(l).map_err(|e| ArgError::new(format!("FLOW `{l}`: {e}")))?;
            table
                .add(&f)
                .map_err(|e| ArgError::new(format!("FLOW `{l}`: {e}")))?;
        }
        Ok(table)
    })?;
    // Later instances find the table made: their arguments are read again
    // so that `complete` sees them used.
    for key in ["MODE", "FILE", "SEED"] {
        let _: Option<String> = args.read(key)?;
    }
    for key in ["CAPACITY", "K", "BUCKETS"] {
        let _: Option<u64> = args.read(key)?;
    }
    let _: Vec<String> = args.read_all("FLOW")?;
    Ok(Box::new(FlowTable {
        table,
        first_worker: true,
    }))
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x51ed_270b_2743_a7c5);
    h.finish()
}

/// The element: a handle on the shared table.
pub struct FlowTable {
    table: Arc<Table>,
    /// Only the first worker's instance reports the table's counters, so
    /// that summing workers does not multiply them.
    first_worker: bool,
}

impl Element for FlowTable {
    fn start(&mut self, cx: &mut bricks_element::Context<'_>) {
        self.first_worker = cx.worker() == 0;
    }

    fn stats(&self, s: &mut Stats) {
        if !self.first_worker {
            return;
        }
        let c = self.table.counters();
        s.counter("flows", c.flows);
        s.counter("adds", c.adds);
        s.counter("removes", c.removes);
        s.counter("rejected_full", c.rejected_full);
        s.counter("rejected_chain", c.rejected_chain);
        s.counter("slow_lookups", c.slow_lookups);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "add" | "remove")
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "add" => {
                let f = parse_flow(value)?;
                self.table.add(&f).map(|_| ()).map_err(|e| e.to_string())
            }
            "remove" => {
                let words: Vec<&str> = value.split_whitespace().collect();
                let (key, used) = parse_key(&words)?;
                if used != words.len() {
                    return Err(format!(
                        "remove takes a key only (`tag N` or `PROTO SRC[:PORT] DST[:PORT]`), found `{}`",
                        words[used..].join(" ")
                    ));
                }
                self.table.remove(&key).map_err(|e| e.to_string())
            }
            _ => Err(format!(
                "no write handler `{handler}` (FlowTable has `add` and `remove`)"
            )),
        }
    }
}

/// The table an element's TABLE argument names.
pub(crate) fn read_table(args: &mut Args<'_>) -> Result<Arc<Table>, ArgError> {
    args.read_shared_of_mp::<Table>("TABLE", "FlowTable")
}

/// The words of a record, for memory-reference accounting.
pub(crate) const RECORD_WORDS: u64 = flow::RECORD_WORDS;

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::PortInfo;
    use bricks_qos::flow::FlowKey;
    use bricks_runtime::testing::Harness;

    fn table_of(args: &str) -> Result<Arc<Table>, String> {
        let parsed = bricks_runtime::testing::parse_args(args)?;
        let slot = bricks_element::SharedSlot::new();
        let mut a = Args::new(&parsed, None).with_shared(&slot);
        make(&mut a, &PortInfo::default()).map_err(|e| e.message)?;
        a.complete().map_err(|e| e.message)?;
        let t = slot
            .get()
            .unwrap()
            .clone()
            .downcast::<Table>()
            .ok()
            .unwrap();
        Ok(t)
    }

    #[test]
    fn arguments_and_flows() {
        let t = table_of("MODE match, CAPACITY 10, K 2, BUCKETS 4, SEED 1, FLOW udp 1.1.1.1:1 2.2.2.2:2 rate 1M output 1, FLOW tcp 1.1.1.1 2.2.2.2 rate 5k").unwrap();
        assert_eq!(t.mode(), Mode::Match);
        assert_eq!((t.capacity(), t.k(), t.buckets()), (10, 2, 4));
        assert_eq!(t.counters().flows, 2);
        let t = table_of("CAPACITY 8").unwrap();
        assert_eq!(t.mode(), Mode::Tag);
        for (args, why) in [
            ("MODE hash", "expected tag or match"),
            ("CAPACITY 0", "out of range"),
            ("MODE match, K 65", "out of range"),
            ("K 2", "MODE match only"),
            ("FLOW tag 1 rate 0", "FLOW `tag 1 rate 0`: rate `0` is 0"),
            ("CAPACITY 4, FLOW tag 4 rate 1", "beyond the table"),
            (
                "FLOW tag 1 rate 1, FLOW tag 1 rate 2",
                "already in the table",
            ),
            ("MODE match, FLOW tag 1 rate 1", "takes 5-tuple keys"),
            ("FILE /nonexistent/flows", "FILE /nonexistent/flows"),
            ("COLOUR red", "unknown keyword COLOUR"),
        ] {
            let e = table_of(args).unwrap_err();
            assert!(e.contains(why), "{args}: {e}");
        }
    }

    #[test]
    fn the_file_is_read_and_bad_lines_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("flows.txt");
        std::fs::write(
            &p,
            "# two flows\ntag 3 rate 64k via 10.0.0.1 output 2\n\ntag 5 rate 1M\n",
        )
        .unwrap();
        let t = table_of(&format!("FILE {}", p.display())).unwrap();
        assert_eq!(t.counters().flows, 2);
        assert_eq!(t.route(3).output, 2);
        std::fs::write(&p, "tag 3 rate 64k\ntag 4 rate 2T\n").unwrap();
        let e = table_of(&format!("FILE {}", p.display())).unwrap_err();
        assert!(e.ends_with("line 2: rate `2T` is above 1 Tbit/s"), "{e}");
        std::fs::write(&p, "tag 3 rate 64k\n\ntag 3 rate 1k\n").unwrap();
        let e = table_of(&format!("FILE {}", p.display())).unwrap_err();
        assert!(e.ends_with("line 3: tag 3 is already on line 1"), "{e}");
    }

    #[test]
    fn handlers_add_and_remove() {
        let h = Harness::new(
            &CLASS,
            "MODE match, CAPACITY 4, K 4, SEED 3",
            PortInfo::default(),
        );
        h.write_handler(
            "add",
            "udp 10.0.0.1:53 10.0.0.2:5353 rate 64k via 10.1.1.1 output 1",
        )
        .unwrap();
        let e = h
            .write_handler("add", "udp 10.0.0.1:53 10.0.0.2:5353 rate 64k")
            .unwrap_err();
        assert!(e.contains("already in the table"), "{e}");
        let e = h.write_handler("add", "tag 1 rate 1").unwrap_err();
        assert!(e.contains("5-tuple"), "{e}");
        let e = h
            .write_handler("remove", "udp 10.0.0.1:53 10.0.0.2:5353 rate 1")
            .unwrap_err();
        assert!(e.contains("key only"), "{e}");
        h.write_handler("remove", "udp 10.0.0.1:53 10.0.0.2:5353")
            .unwrap();
        let e = h
            .write_handler("remove", "udp 10.0.0.1:53 10.0.0.2:5353")
            .unwrap_err();
        assert!(e.contains("not in the table"), "{e}");
        assert!(h.write_handler("flush", "").is_err());
        let s = h.stats();
        assert_eq!(s.get("adds"), Some(1));
        assert_eq!(s.get("removes"), Some(1));
        assert_eq!(s.get("flows"), Some(0));
        let _ = FlowKey::Tag(0);
    }
}
