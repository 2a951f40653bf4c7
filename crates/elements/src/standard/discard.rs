//! `Discard`: drops every packet, counting them.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};
use bricks_packet::DEFAULT_BURST;

/// The `Discard` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Discard",
    ports: "1/0",
    processing: "a/",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "drops all packets",
    synopsis: "Discard([BURST])",
    description: "Drops every packet it receives and counts them. Connected to a pull \
        output (after a Queue) it runs a task that pulls up to BURST packets at a time.",
    ports: "one input, push or pull; no outputs",
    keywords: &[Keyword {
        name: "BURST",
        ty: "unsigned",
        default: Some("32"),
        doc: "packets pulled per task run when the input is pull",
    }],
    counters: &[("count", "packets dropped")],
    example: "InfiniteSource(LIMIT 5) -> Discard;",
    see_also: &["Idle"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let burst = args.read_p("BURST")?.unwrap_or(DEFAULT_BURST);
    Ok(Box::new(Discard {
        count: 0,
        burst: burst.clamp(1, bricks_packet::MAX_BATCH),
        pull: ports.input_is_pull(0),
    }))
}

/// Drops packets.
#[derive(Debug)]
pub struct Discard {
    count: u64,
    burst: usize,
    pull: bool,
}

impl Element for Discard {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        self.count += batch.len() as u64;
        batch.clear();
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::pump_if(self.pull)
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        cx.pull_task(self.burst, |b, cx| self.push(0, b, cx))
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    #[test]
    fn push_counts() {
        let mut h = Harness::push(&CLASS, "", 1, 0);
        h.push_bytes(0, &[1, 2, 3]);
        assert_eq!(h.stats().get("count"), Some(1));
    }

    #[test]
    fn pull_task_drains_input() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![],
        };
        let mut h = Harness::new(&CLASS, "BURST 2", ports);
        h.feed(0, (0..3).map(|_| Packet::from_slice(&[0; 10]).unwrap()));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.stats().get("count"), Some(3));
    }
}
