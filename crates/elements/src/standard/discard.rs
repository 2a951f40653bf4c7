//! `Discard`: drops every packet, counting them.

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
