//! `SchedOrderTest`: Click's `elements/test/schedordertest.cc`, which
//! shows the order in which the scheduler runs tasks. Each instance runs a
//! task that writes its ID into a log all the instances share, so that with
//! `ScheduleInfo` tickets the log shows stride scheduling at work: tickets
//! 1, 2 and 3 give `1 3 2 3 3 1 2 3 ...`, each task in proportion to its
//! tickets.

use std::sync::{Arc, Mutex};

use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};

/// The `SchedOrderTest` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SchedOrderTest",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "remembers the order in which tasks run",
    synopsis: "SchedOrderTest(ID [, KEYWORDS])",
    description: "Runs a task that, each time it runs, appends ID to a log shared by \
        every SchedOrderTest of the configuration (the first one's, as declared: in a \
        compound, the compound's first). The log holds the largest SIZE any of them gives \
        (1024 when none does); once it is full, runs are no longer logged and a \
        SchedOrderTest with STOP stops the router. With LIMIT the task runs that many \
        times and then no more. The `order` handler prints the log, IDs separated by \
        spaces. Give the tasks tickets with `ScheduleInfo` to watch stride scheduling: \
        each task runs in proportion to its tickets, in Click's order.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "ID",
            ty: "integer",
            default: None,
            doc: "what this task writes into the log",
        },
        Keyword {
            name: "SIZE",
            ty: "unsigned integer",
            default: Some("1024"),
            doc: "room in the shared log, in IDs (the largest of all instances counts)",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router when this task finds the log full",
        },
        Keyword {
            name: "LIMIT",
            ty: "unsigned integer",
            default: Some("0 (no limit)"),
            doc: "how many times the task runs",
        },
    ],
    counters: &[("count", "times this task ran")],
    example: "s1 :: SchedOrderTest(1, SIZE 12, STOP true); s2 :: SchedOrderTest(2);\n\
        ScheduleInfo(s1 1, s2 2);\n\
        DriverManager(wait_stop, print s1.order, stop)",
    see_also: &["ScheduleInfo", "NullTask"],
};

/// The largest log one configuration may ask for, in IDs: a bound on the
/// memory a SIZE argument takes.
const MAX_SIZE: usize = 1 << 24;

/// The log the instances share.
#[derive(Debug, Default)]
struct Log {
    ids: Vec<i32>,
    /// Room: the largest SIZE given (0 until one is).
    size: usize,
}

impl Log {
    /// Click's buffer of 1024 when no instance gave a SIZE.
    fn room(&self) -> usize {
        if self.size == 0 {
            1024
        } else {
            self.size
        }
    }
}

/// Each instance's shared state: its own log, which is the common one when
/// it is the first instance.
type Shared = Mutex<Log>;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let id: i64 = args.read_mp("ID")?;
    let id = i32::try_from(id).map_err(|_| ArgError::new("ID must be a 32-bit integer"))?;
    let size: Option<u32> = args.read("SIZE")?;
    let stop = args.read("STOP")?.unwrap_or(false);
    let limit: u32 = args.read("LIMIT")?.unwrap_or(0);
    let size = size.map_or(0, |s| s as usize);
    if size > MAX_SIZE {
        return Err(ArgError::new(format!("SIZE must be at most {MAX_SIZE}")));
    }
    let own: Arc<Shared> = args.shared(|_| Ok(Mutex::default()))?;
    // The first instance in scope keeps the log. Its own shared state is
    // made before it looks, so the first never waits on another.
    let log = args
        .shared_in_scope::<Shared>("SchedOrderTest")
        .map_err(ArgError::new)?
        .into_iter()
        .next()
        .unwrap_or(own);
    {
        let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
        l.size = l.size.max(size);
    }
    Ok(Box::new(SchedOrderTest {
        id,
        stop,
        limit,
        count: 0,
        log,
    }))
}

/// One task that logs its runs.
#[derive(Debug)]
pub struct SchedOrderTest {
    id: i32,
    stop: bool,
    limit: u32,
    count: u32,
    log: Arc<Shared>,
}

impl Element for SchedOrderTest {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if self.limit != 0 && self.count >= self.limit {
            return TaskResult::Done;
        }
        {
            let mut l = self.log.lock().unwrap_or_else(|e| e.into_inner());
            if l.ids.len() < l.room() {
                l.ids.push(self.id);
            } else if self.stop {
                cx.request_stop();
            }
        }
        self.count = self.count.saturating_add(1);
        if self.limit != 0 && self.count >= self.limit {
            TaskResult::Done
        } else {
            TaskResult::Worked
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", u64::from(self.count));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "order").then(|| {
            let l = self.log.lock().unwrap_or_else(|e| e.into_inner());
            let mut s = l
                .ids
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(" ");
            if !s.is_empty() {
                s.push('\n');
            }
            s
        })
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("order"), Handler::r("count")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::testrun::plan;
    use bricks_runtime::Engine;

    /// Runs `config` to its end; `element.order` then.
    fn order(config: &str, element: &str) -> String {
        let plan = plan(config).unwrap();
        let mut engine = Engine::new(&plan).unwrap();
        engine.idle_sleep = false;
        let s = engine.run();
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        engine.read_handler(element, "order").unwrap().into_text()
    }

    #[test]
    fn tickets_give_clicks_stride_order() {
        // Click 2.1's output for the same configuration.
        let config = "a :: SchedOrderTest(1, SIZE 20, STOP true); b :: SchedOrderTest(2);\n\
             ScheduleInfo(a 1, b 3);";
        let line = "1 2 2 2 1 2 2 2 1 2 2 2 1 2 2 2 1 2 2 2\n";
        assert_eq!(order(config, "a"), line);
        assert_eq!(order(config, "b"), line);
    }

    #[test]
    fn three_tasks_one_with_a_limit() {
        // Click's conf/schedorder1.click: tickets 1:2:3, the second stops
        // after 10 runs.
        let out = order(
            "s1 :: SchedOrderTest(1, SIZE 100, STOP true);\n\
             s2 :: SchedOrderTest(2, SIZE 100, LIMIT 10);\n\
             s3 :: SchedOrderTest(3, SIZE 100);\n\
             ScheduleInfo(s1 1, s2 2, s3 3);",
            "s3",
        );
        let ids: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(ids.len(), 100);
        assert_eq!(ids.iter().filter(|&&i| i == "2").count(), 10);
        // Click 2.1's order, but for its last runs: Click's stride for 3
        // tickets is 21 for 64 per ticket (2^16 / 3072 rounded down), so
        // its third task gains a run on the first by the 100th; bricks'
        // strides are exact to parts per million.
        let click = "1 3 2 3 3 1 2 3 2 3 3 1 2 3 2 3 3 1 2 3 2 3 3 1 2 3 2 3 3 1 2 3 \
                     3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 \
                     1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3 1 3 3 3";
        let click: Vec<&str> = click.split_whitespace().collect();
        assert_eq!(ids[..click.len()], click[..]);
    }

    #[test]
    fn arguments() {
        use bricks_runtime::testing::make_element;
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("1, SIZE 10, STOP true, LIMIT 3").is_ok());
        assert!(m("").is_err());
        assert!(m("x").is_err());
        assert!(m("1, SIZE 100000000").is_err());
    }
}
