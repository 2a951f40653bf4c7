//! `SimpleIdle`: Idle without notification (Click's
//! `elements/simple/simpleidle.cc`): it never produces a packet and drops
//! what it is given, but does not tell pullers that it is empty.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo, Stats,
};

/// The `SimpleIdle` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SimpleIdle",
    ports: "-/-",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "discards packets; never emits any (Idle without notification)",
    synopsis: "SimpleIdle",
    description: "Like Idle: has any number of inputs and outputs, never pushes a packet \
        out, answers every pull with nothing, and drops (and counts) packets pushed into \
        it. Unlike Idle it gives no empty notification, as in Click: a task pulling from \
        it reads as scheduled (its `scheduled` handler says true), where after Idle it \
        says false.",
    ports: "any number of inputs and outputs, push or pull",
    keywords: &[],
    counters: &[("drops", "packets pushed into it")],
    example: "SimpleIdle -> Queue -> Discard;",
    see_also: &["Idle", "Discard"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(SimpleIdle { drops: 0 }))
}

/// Never produces packets, and says nothing about it.
#[derive(Debug)]
pub struct SimpleIdle {
    drops: u64,
}

impl Element for SimpleIdle {
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        self.drops += batch.len() as u64;
        batch.clear();
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    // No `empty_signal`: with neither an answer nor pull inputs, a pull
    // from it may always find packets, as Click's element without an
    // empty notifier.
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    #[test]
    fn drops_and_pulls_nothing() {
        let ports = PortInfo {
            inputs: vec![Processing::Push, Processing::Push],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "", ports);
        h.push_bytes(0, &[0; 20]);
        h.push_bytes(1, &[0; 60]);
        assert_eq!(h.stats().get("drops"), Some(2));
        assert!(h.pull(0, 10).is_empty());
    }
}
