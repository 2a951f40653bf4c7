//! `Unqueue`: a task that pulls packets and pushes them on.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::{DEFAULT_BURST, MAX_BATCH};

/// The `Unqueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Unqueue",
    ports: "1/1",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pulls packets and pushes them",
    synopsis: "Unqueue([BURST, LIMIT, ACTIVE])",
    description: "Runs a task that pulls up to BURST packets from its input and pushes them \
        out, turning a pull path back into a push path. With LIMIT it stops after that many \
        packets.",
    ports: "one pull input; one push output",
    keywords: &[
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets moved per task run (up to 256)",
        },
        Keyword {
            name: "LIMIT",
            ty: "integer",
            default: Some("-1"),
            doc: "packets to move in all; -1 for no limit",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "move packets at all",
        },
    ],
    counters: &[("count", "packets moved")],
    example: "InfiniteSource(LIMIT 10) -> Queue -> Unqueue(BURST 4) -> Discard;",
    see_also: &["Queue"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let burst: usize = args.read_p("BURST")?.unwrap_or(DEFAULT_BURST);
    let limit: i64 = args.read("LIMIT")?.unwrap_or(-1);
    let active: bool = args.read("ACTIVE")?.unwrap_or(true);
    Ok(Box::new(Unqueue {
        burst: burst.clamp(1, MAX_BATCH),
        limit: u64::try_from(limit).ok(),
        active,
        count: 0,
    }))
}

/// Pulls and pushes.
#[derive(Debug)]
pub struct Unqueue {
    burst: usize,
    limit: Option<u64>,
    active: bool,
    count: u64,
}

impl Element for Unqueue {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    #[inline]
    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.active {
            return TaskResult::Idle;
        }
        let left = self
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(self.count));
        let n = (self.burst as u64).min(left) as usize;
        if n == 0 {
            return TaskResult::Idle;
        }
        let mut b = Batch::new();
        cx.pull(0, &mut b, n);
        if b.is_empty() {
            return TaskResult::Idle;
        }
        self.count += b.len() as u64;
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            "burst" => {
                let b = usize::from_arg(value.trim())?;
                self.burst = b.clamp(1, MAX_BATCH);
            }
            "reset" => self.count = 0,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (active, burst, reset)"
                ))
            }
        }
        Ok(())
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "active" => Some(self.active.to_string()),
            "burst" => Some(self.burst.to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 4] = [
            Handler::r("count"),
            Handler::rw("active"),
            Handler::rw("burst"),
            Handler::w("reset"),
        ];
        &HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    #[test]
    fn moves_bursts_up_to_limit() {
        let mut h = Harness::new(
            &CLASS,
            "BURST 2, LIMIT 3",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Push],
            },
        );
        h.feed(0, (0..5u8).map(|i| Packet::from_slice(&[i]).unwrap()));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.stats().get("count"), Some(3));
        assert_eq!(h.read_handler("burst").as_deref(), Ok("2"));
        assert_eq!(h.read_handler("active").as_deref(), Ok("true"));
        h.write_handler("burst", "5").unwrap();
        h.write_handler("active", "false").unwrap();
        assert_eq!(h.read_handler("burst").as_deref(), Ok("5"));
        assert_eq!(h.read_handler("active").as_deref(), Ok("false"));
        assert!(h.write_handler("burst", "x").is_err());
    }
}
