//! `EtherCount`: counts packets by Ethernet source address (Click's
//! `elements/wifi/ethercount.cc`), in a bounded table shared by every
//! worker.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, PortInfo, Stats,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `EtherCount` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherCount",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Most source addresses counted; packets from further sources pass
/// uncounted (and are counted in `refused`).
pub const MAX_SOURCES: usize = 65_536;

static MANUAL: Manual = Manual {
    summary: "tracks each Ethernet source",
    synopsis: "EtherCount",
    description: "Counts the packets from each Ethernet source address (bytes 6 to 11 of \
        the frame) and passes them on unchanged. The `stats` handler lists one line per \
        source, `XX-XX-XX-XX-XX-XX COUNT`, in the order the sources were first seen; \
        writing `reset` forgets them all. One table serves every worker. Unlike Click, \
        whose table grows without bound, bricks counts at most 65536 sources: packets from \
        others pass uncounted and are counted in `refused`. Frames shorter than 12 bytes \
        (Click reads past their end) are dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[
        ("refused", "packets from sources beyond the table's 65536"),
        ("drops", "frames shorter than 12 bytes"),
    ],
    example: "InfiniteSource(DATA \\<ffffffffffff 020000000001 0800>, LIMIT 3) \
        -> EtherCount -> Discard;",
    see_also: &["Counter", "AggregateCounter"],
};

/// The per-source counts, in the order sources were first seen.
#[derive(Debug, Default)]
struct Table {
    index: HashMap<[u8; 6], usize>,
    counts: Vec<([u8; 6], u64)>,
    refused: u64,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let table = args.shared(|_| Ok(Mutex::new(Table::default())))?;
    Ok(Box::new(EtherCount { table, drops: 0 }))
}

/// Counts packets by source.
#[derive(Debug)]
pub struct EtherCount {
    table: Arc<Mutex<Table>>,
    drops: u64,
}

impl EtherCount {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn apply(&mut self, b: &mut Batch) {
        let before = b.len();
        b.retain(|p| p.len() >= 12);
        self.drops += (before - b.len()) as u64;
        // One lock a batch.
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        for p in b.iter() {
            let mut src = [0u8; 6];
            src.copy_from_slice(&p.data()[6..12]);
            let next = t.counts.len();
            match t.index.get(&src) {
                Some(&i) => t.counts[i].1 += 1,
                None if next < MAX_SOURCES => {
                    t.index.insert(src, next);
                    t.counts.push((src, 1));
                }
                None => t.refused += 1,
            }
        }
    }
}

impl Element for EtherCount {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        // Shared by every worker: worker 0's copy answers alone, so the
        // sum over workers is not multiplied.
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "stats" => {
                let t = self.table();
                let mut out = String::new();
                for (a, n) in &t.counts {
                    let addr: Vec<String> = a.iter().map(|b| format!("{b:02X}")).collect();
                    out.push_str(&format!("{} {n}\n", addr.join("-")));
                }
                Some(out)
            }
            "refused" => Some(self.table().refused.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                let mut t = self.table();
                t.index.clear();
                t.counts.clear();
                t.refused = 0;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (EtherCount has `reset`)"
            )),
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reset"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("stats"),
            Handler::w("reset"),
            Handler::r("refused"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    fn frame(src: u8) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[0x02, 0, 0, 0, 0, src]);
        f.extend_from_slice(&[0x08, 0x00]);
        f
    }

    #[test]
    fn counts_by_source_in_first_seen_order() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for s in [3, 1, 3, 3, 2] {
            h.push_bytes(0, &frame(s));
        }
        h.push_bytes(0, &frame(1)[..11]);
        assert_eq!(h.take(0).len(), 5);
        assert_eq!(
            h.read_handler("stats").unwrap(),
            "02-00-00-00-00-03 3\n02-00-00-00-00-01 1\n02-00-00-00-00-02 1\n"
        );
        assert_eq!(h.stats().get("drops"), Some(1));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.read_handler("stats").unwrap(), "");
    }

    #[test]
    fn the_table_is_bounded() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut b = Vec::new();
        for i in 0..MAX_SOURCES + 10 {
            let mut f = frame(0);
            f[8..12].copy_from_slice(&(i as u32).to_be_bytes());
            b.push(bricks_element::Packet::from_slice(&f).unwrap());
        }
        h.push_packets(0, b);
        assert_eq!(h.take(0).len(), MAX_SOURCES + 10);
        assert_eq!(h.read_handler("refused").unwrap(), "10");
        assert_eq!(
            h.read_handler("stats").unwrap().lines().count(),
            MAX_SOURCES
        );
    }
}
