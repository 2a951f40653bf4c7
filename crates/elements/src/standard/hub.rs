//! `Hub`: copies each packet to every output but the one matching its
//! input (Click's `elements/standard/hub.cc`), like an Ethernet hub.

use bricks_element::{ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo};

/// The `Hub` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Hub",
    ports: "-/-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "duplicates packets like a hub",
    synopsis: "Hub",
    description: "Sends a copy of each packet that arrives on input N out of every output \
        but output N, in output order, so the element acts like an Ethernet hub (without \
        being Ethernet specific). It has as many outputs as inputs. A packet from an input \
        with no other output to go to is dropped and counted by the graph.",
    ports: "any number of push inputs, as many push outputs",
    keywords: &[],
    counters: &[],
    example: "h :: Hub; InfiniteSource(LIMIT 2) -> [0]h[0] -> Discard; \
        InfiniteSource(LIMIT 2) -> [1]h[1] -> Discard;",
    see_also: &["Tee"],
};

fn make(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    if ports.noutputs() != ports.ninputs() {
        return Err(ArgError::new(format!(
            "Hub has {} inputs and {} outputs; it needs as many outputs as inputs",
            ports.ninputs(),
            ports.noutputs()
        )));
    }
    Ok(Box::new(Hub {
        outputs: ports.noutputs(),
        drops: 0,
    }))
}

/// Copies packets to every output but their input's.
#[derive(Debug)]
pub struct Hub {
    outputs: usize,
    drops: u64,
}

impl Element for Hub {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // Click sends copies to the lower outputs and the original to the
        // last one; the order of outputs is what a reader sees.
        let last = if port + 1 == self.outputs {
            port.checked_sub(1)
        } else {
            Some(self.outputs - 1)
        };
        let Some(last) = last else {
            self.drops += batch.len() as u64;
            batch.clear();
            return;
        };
        for out in (0..last).filter(|&o| o != port) {
            let mut copies = Batch::new();
            for p in batch.iter() {
                let _ = copies.push(p.duplicate());
            }
            cx.push(out, &mut copies);
        }
        cx.push(last, batch);
    }

    fn stats(&self, s: &mut bricks_element::Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn copies_to_every_other_output() {
        let mut h = Harness::push(&CLASS, "", 3, 3);
        h.push_bytes(1, &[0x45, 1]);
        assert_eq!(h.take_bytes(0), vec![vec![0x45, 1]]);
        assert!(h.take_bytes(1).is_empty());
        assert_eq!(h.take_bytes(2), vec![vec![0x45, 1]]);
        h.push_bytes(2, &[0x45, 2]);
        assert_eq!(h.take_bytes(0), vec![vec![0x45, 2]]);
        assert_eq!(h.take_bytes(1), vec![vec![0x45, 2]]);
        assert!(h.take_bytes(2).is_empty());
    }

    #[test]
    fn one_port_hub_drops() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &[1]);
        assert!(h.take_bytes(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
    }
}
