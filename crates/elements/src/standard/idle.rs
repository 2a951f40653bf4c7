//! `Idle`: a placeholder that never produces a packet.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo, Stats,
};

/// The `Idle` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Idle",
    ports: "-/-",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "never emits packets; drops what it receives",
    synopsis: "Idle",
    description: "Has any number of inputs and outputs. Never pushes a packet out, \
        answers every pull with nothing, and drops (and counts) packets pushed into it. \
        Useful to tie off ports a configuration does not use.",
    ports: "any number of inputs and outputs, push or pull",
    keywords: &[],
    counters: &[("drops", "packets pushed into it")],
    example: "Idle -> Discard;",
    see_also: &["Discard"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(Idle { drops: 0 }))
}

/// Never produces packets.
#[derive(Debug)]
pub struct Idle {
    drops: u64,
}

impl Element for Idle {
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        self.drops += batch.len() as u64;
        batch.clear();
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        // Click's Idle: an empty notifier that never wakes.
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    #[test]
    fn drops_and_pulls_nothing() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "", ports);
        h.push_bytes(0, &[0; 20]);
        assert_eq!(h.stats().get("drops"), Some(1));
        assert!(h.pull(0, 10).is_empty());
    }
}
