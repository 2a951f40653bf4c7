//! `Discard`: drops every packet, counting them; and `DiscardNoFree`,
//! Click's benchmarking sink that leaks what it drops
//! (`elements/standard/discardnofree.cc`), which here frees them too.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
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

/// The `DiscardNoFree` class.
pub static DISCARD_NO_FREE: ElementClass = ElementClass {
    name: "DiscardNoFree",
    ports: "1/0",
    processing: "a/",
    manual: &NO_FREE_MANUAL,
    make: make_no_free,
};

static NO_FREE_MANUAL: Manual = Manual {
    summary: "drops all packets (Click: without freeing them)",
    synopsis: "DiscardNoFree",
    description: "Drops every packet it receives. Connected to a pull output it runs a task \
        that pulls up to 32 packets a run (Click pulls one). Click's DiscardNoFree does not \
        free the packets, on purpose: a benchmark of the path up to it then leaves out the \
        cost of freeing, and the leaked packets do not matter for a short run. bricks \
        counts the packets and frees them, as Discard does: its buffers belong to pools \
        that a leak would drain, stopping the router, and freeing a buffer is a return to \
        the pool that costs next to nothing. It is a Discard under another name, with \
        Discard's handlers (`count`, `reset_counts`, and `active` on a pull input).",
    ports: "one input, push or pull; no outputs",
    keywords: &[],
    counters: &[("count", "packets dropped (and freed)")],
    example: "InfiniteSource(LIMIT 5) -> DiscardNoFree;",
    see_also: &["Discard"],
};

static MANUAL: Manual = Manual {
    summary: "drops all packets",
    synopsis: "Discard([BURST, ACTIVE])",
    description: "Drops every packet it receives and counts them. Connected to a pull \
        output (after a Queue) it runs a task that pulls up to BURST packets at a time.",
    ports: "one input, push or pull; no outputs",
    keywords: &[
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets pulled per task run when the input is pull",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "whether it pulls (pull input only; the `active` handler changes it)",
        },
    ],
    counters: &[("count", "packets dropped")],
    example: "InfiniteSource(LIMIT 5) -> Discard;",
    see_also: &["Idle"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let burst = args.read_p("BURST")?.unwrap_or(DEFAULT_BURST);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    if !active && !ports.input_is_pull(0) {
        return Err(ArgError::new("ACTIVE is meaningless in push context"));
    }
    Ok(Box::new(Discard {
        count: 0,
        active,
        burst: burst.clamp(1, bricks_packet::MAX_BATCH),
        pull: ports.input_is_pull(0),
    }))
}

fn make_no_free(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // A Discard: the packets are counted and freed (see the manual).
    Ok(Box::new(Discard {
        count: 0,
        active: true,
        burst: DEFAULT_BURST,
        pull: ports.input_is_pull(0),
    }))
}

/// Drops packets.
#[derive(Debug)]
pub struct Discard {
    count: u64,
    active: bool,
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

    /// Hot swap: the count continues.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        if let Some(old) = bricks_element::taken_from::<Discard>(old) {
            self.count += old.count;
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.active {
            return TaskResult::Idle;
        }
        cx.pull_task(self.burst, |b, cx| self.push(0, b, cx))
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "active" if self.pull => Some(self.active.to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const PUSH: &[Handler] = &[Handler::r("count"), Handler::w("reset_counts")];
        const PULL: &[Handler] = &[
            Handler::r("count"),
            Handler::w("reset_counts"),
            Handler::rw("active"),
        ];
        if self.pull {
            PULL
        } else {
            PUSH
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "reset_counts" => {
                self.count = 0;
                Ok(())
            }
            "active" if self.pull => {
                self.active = <bool as bricks_element::FromArg>::from_arg(value.trim())
                    .map_err(|e| format!("active: expected true or false, {e}"))?;
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    #[test]
    fn inactive_pull_discard_pulls_nothing_until_activated() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![],
        };
        assert!(Harness::try_new(
            &CLASS,
            "ACTIVE false",
            PortInfo {
                inputs: vec![Processing::Push],
                outputs: vec![],
            }
        )
        .is_err());
        let mut h = Harness::new(&CLASS, "ACTIVE false", ports);
        h.feed(0, [Packet::from_slice(&[1]).unwrap()]);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.read_handler("active").as_deref(), Ok("false"));
        h.write_handler("active", "true").unwrap();
        h.run_task();
        assert_eq!(h.stats().get("count"), Some(1));
        h.write_handler("reset_counts", "").unwrap();
        assert_eq!(h.stats().get("count"), Some(0));
    }

    #[test]
    fn no_free_counts_pushed_and_pulled_packets() {
        let mut h = Harness::push(&DISCARD_NO_FREE, "", 1, 0);
        h.push_bytes(0, &[0x45, 0, 0, 20]);
        h.push_bytes(0, &[]);
        assert_eq!(h.stats().get("count"), Some(2));
        assert_eq!(h.read_handler("count").as_deref(), Ok("2"));
        // Discard's handlers, which Click's DiscardNoFree lacks.
        h.write_handler("reset_counts", "").unwrap();
        assert_eq!(h.stats().get("count"), Some(0));

        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![],
        };
        let mut h = Harness::new(&DISCARD_NO_FREE, "", ports);
        h.feed(0, (0..40).map(|_| Packet::from_slice(&[0; 60]).unwrap()));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.stats().get("count"), Some(32));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.stats().get("count"), Some(40));
    }

    #[test]
    fn no_free_takes_no_arguments() {
        let e = bricks_runtime::testing::make_element(&DISCARD_NO_FREE, "8", &Default::default());
        assert!(e.is_err());
    }

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

    #[test]
    fn no_free_runs_in_a_configuration() {
        use crate::standard::testrun::{count, run};
        run(NO_FREE_MANUAL.example);
        let s = run("InfiniteSource(LIMIT 50) -> Queue -> d :: DiscardNoFree;");
        assert_eq!(count(&s, "d", "count"), 50);
    }
}
