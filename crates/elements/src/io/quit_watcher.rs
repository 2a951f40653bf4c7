//! `QuitWatcher`: stops the router as soon as one of the elements it
//! watches is no longer scheduled (Click's
//! `elements/standard/quitwatcher.cc`): a source past its LIMIT, a reader
//! at the end of its file. It reads each element's `scheduled` handler
//! from a timer every 10 ms, as Click's does, so it costs the data path
//! nothing.

use bricks_element::{ArgError, Args, Context, Element, ElementClass, Keyword, Manual, PortInfo};
use bricks_packet::Timestamp;

/// The `QuitWatcher` class.
pub static CLASS: ElementClass = ElementClass {
    name: "QuitWatcher",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stops the router when an element's task is no longer scheduled",
    synopsis: "QuitWatcher(ELEMENT, ...)",
    description: "Every 10 milliseconds reads the `scheduled` handler of each ELEMENT and \
        stops the router (as a source's STOP does: the packets in flight are delivered) as \
        soon as one of them is false: a source whose LIMIT is reached or whose file is read \
        through, a task StaticThreadSched places nowhere, a task that pulls from an empty \
        queue, a source held back by full queues (Click's tasks sleep then, and bricks' \
        `scheduled` says so). Each ELEMENT is named as in Click, relative to the compound the \
        QuitWatcher sits in, and must have a task (a `scheduled` handler): a name that is no \
        element, or an element without a task, is an error when the router starts, and the \
        run ends at once with that error, as Click refuses to initialize. A QuitWatcher \
        with no ELEMENT does nothing, as in Click.\n\n\
        A bricks run also ends by itself once every source is done; QuitWatcher ends it when \
        one watched element is done while others go on (an unlimited source, a socket that \
        receives). With several workers each worker watches the elements whose task it runs \
        (their `home_thread`), and worker 0 those whose task runs nowhere; Click has one \
        thread read them all.",
    ports: "none",
    keywords: &[Keyword {
        name: "ELEMENT",
        ty: "element name",
        default: Some("none: nothing is watched"),
        doc: "an element with a task whose `scheduled` handler is watched; positional, any \
              number of them",
    }],
    counters: &[],
    example: "s :: InfiniteSource(LIMIT 10) -> Discard;\n\
        TimedSource(0.1) -> Discard;\n\
        QuitWatcher(s);",
    see_also: &["Script", "InfiniteSource", "StaticThreadSched"],
};

/// How often the watched elements are read (Click's 10 ms).
const INTERVAL_NS: u64 = 10_000_000;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut names = Vec::new();
    for (text, span) in args.rest() {
        let name = text.trim();
        if name.is_empty() {
            continue;
        }
        if name.contains(char::is_whitespace) || name.contains(['"', '\'', '(', ')']) {
            return Err(
                ArgError::at(span, format!("`{name}` is not an element name")).with_help(
                    "QuitWatcher takes the names of elements with a task, one per argument",
                ),
            );
        }
        names.push(name.to_string());
    }
    Ok(Box::new(QuitWatcher {
        names,
        watched: Vec::new(),
        next: None,
    }))
}

/// Why an ELEMENT cannot be watched.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WatchError {
    /// The name is no element of the configuration.
    NoElement(String),
    /// The element runs no task, so it has no `scheduled` handler.
    NoTask(String),
}

impl core::fmt::Display for WatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WatchError::NoElement(n) => write!(f, "no element named `{n}`"),
            WatchError::NoTask(n) => write!(
                f,
                "`{n}` has no task, so no `scheduled` handler to watch: name a source or an \
                 element that pulls"
            ),
        }
    }
}

/// Watches elements' tasks and stops the router when one is done.
#[derive(Debug)]
pub struct QuitWatcher {
    /// The ELEMENTs as written.
    names: Vec<String>,
    /// The watched elements whose task this worker runs.
    watched: Vec<usize>,
    /// When the timer is due; `None` once the router is told to stop.
    next: Option<Timestamp>,
}

impl QuitWatcher {
    /// The elements this worker watches: those named whose task runs
    /// here, and on worker 0 those whose task runs nowhere.
    fn resolve(&self, cx: &mut Context<'_>) -> Result<Vec<usize>, WatchError> {
        let me = cx.worker() as i64;
        let mut mine = Vec::new();
        for name in &self.names {
            let i = cx
                .find_element(name)
                .ok_or_else(|| WatchError::NoElement(name.clone()))?;
            let home = cx
                .call_handler(i, "home_thread", "", false)
                .map_err(|_| WatchError::NoTask(name.clone()))?;
            let home: i64 = home.trim().parse().unwrap_or(0);
            if home == me || (home < 0 && me == 0) {
                mine.push(i);
            }
        }
        Ok(mine)
    }

    fn schedule(&mut self, cx: &mut Context<'_>) {
        let at = Timestamp(cx.now().0.saturating_add(INTERVAL_NS));
        self.next = Some(at);
        cx.schedule_at(at);
    }
}

/// Whether a `scheduled` handler's value says the task is scheduled; as
/// in Click, an empty value or one starting with `f` says it is not.
fn is_scheduled(value: &str) -> bool {
    !(value.is_empty() || value.starts_with('f'))
}

impl Element for QuitWatcher {
    fn start(&mut self, cx: &mut Context<'_>) {
        match self.resolve(cx) {
            Ok(mine) => {
                self.watched = mine;
                if !self.watched.is_empty() {
                    self.schedule(cx);
                }
            }
            Err(e) => {
                // Every worker finds the same error; one reports it.
                if cx.worker() == 0 {
                    cx.report_error(e.to_string());
                    cx.request_stop();
                }
            }
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        match self.next {
            Some(at) if cx.now() >= at => self.next = None,
            // A timer asked for before the last one ran, or after a stop.
            _ => return,
        }
        if cx.stopping() {
            return;
        }
        for k in 0..self.watched.len() {
            let i = self.watched[k];
            let value = cx
                .call_handler(i, "scheduled", "", false)
                .unwrap_or_default();
            if !is_scheduled(value.trim()) {
                cx.request_stop();
                return;
            }
        }
        self.schedule(cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;
    use bricks_runtime::{Engine, StopReason};

    /// Builds `config` into one engine on a trace clock, so that timers
    /// run when the test moves the clock and at no other time.
    fn engine(config: &str) -> Result<Engine, String> {
        let mut map = bricks_config::SourceMap::default();
        let render = |map: &bricks_config::SourceMap, d: Vec<bricks_config::Diagnostic>| {
            d.iter()
                .map(|d| map.render(d))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let router = bricks_config::parse(
            &mut map,
            bricks_config::Source {
                name: "<test>".into(),
                text: config.to_string(),
            },
        )
        .map_err(|d| render(&map, d))?;
        let plan =
            bricks_runtime::build(&router, &crate::registry()).map_err(|d| render(&map, d))?;
        let mut e = Engine::new(&plan).map_err(|d| d.message)?;
        e.idle_sleep = false;
        e.set_trace_clock(true);
        Ok(e)
    }

    fn read(e: &Engine, element: &str, handler: &str) -> String {
        e.read_handler(element, handler).unwrap().into_text()
    }

    #[test]
    fn arguments_are_element_names() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(ok("").is_ok());
        assert!(ok("s").is_ok());
        assert!(ok("s, c/src, SRC").is_ok());
        let err = ok("s t").unwrap_err();
        assert!(err.contains("`s t` is not an element name"), "{err}");
        assert!(ok("\"s\"").is_err());
    }

    #[test]
    fn scheduled_values_read_as_clicks() {
        assert!(is_scheduled("true"));
        assert!(!is_scheduled("false"));
        assert!(!is_scheduled(""));
    }

    /// Moves the clock of `e` by `ns` and runs one round.
    fn tick(e: &mut Engine, now: &mut u64, ns: u64) {
        *now += ns;
        e.set_clock(Timestamp(*now));
        e.step();
    }

    #[test]
    fn stops_the_router_when_a_watched_source_is_done() {
        // `long` would run far longer than the test: only QuitWatcher
        // ends this run early.
        let mut e = engine(
            "s :: InfiniteSource(LIMIT 3, STOP false) -> Discard;\n\
             long :: InfiniteSource(LIMIT 100000000, STOP false) -> Discard;\n\
             QuitWatcher(s);",
        )
        .unwrap();
        e.start();
        let mut now = 0;
        // Before its timer, nothing is read.
        for _ in 0..4 {
            e.step();
        }
        assert_eq!(read(&e, "s", "scheduled"), "false");
        assert_eq!(read(&e, "long", "scheduled"), "true");
        tick(&mut e, &mut now, INTERVAL_NS);
        let summary = e.run();
        assert_eq!(summary.reason, StopReason::Requested);
        assert_eq!(read(&e, "s", "count"), "3");
        assert!(read(&e, "long", "count").parse::<u64>().unwrap() < 100_000_000);
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
    }

    #[test]
    fn goes_on_while_every_watched_element_is_scheduled() {
        let mut e = engine(
            "a :: InfiniteSource(LIMIT 2000, STOP false) -> Discard;\n\
             b :: InfiniteSource(LIMIT 2000, STOP false) -> Discard;\n\
             s :: InfiniteSource(LIMIT 2, STOP false) -> Discard;\n\
             QuitWatcher(a, b);",
        )
        .unwrap();
        e.start();
        let mut now = 0;
        for _ in 0..5 {
            tick(&mut e, &mut now, INTERVAL_NS);
        }
        // `s` is done, but it is not watched: the run goes on until the
        // watched sources are done too, and ends for that.
        assert_eq!(read(&e, "s", "scheduled"), "false");
        assert_eq!(read(&e, "a", "scheduled"), "true");
        let summary = e.run();
        assert_eq!(summary.reason, StopReason::SourcesDone);
        assert_eq!(read(&e, "a", "count"), "2000");
        assert_eq!(read(&e, "b", "count"), "2000");
    }

    #[test]
    fn unknown_elements_and_elements_without_tasks_end_the_run_with_an_error() {
        let long = "InfiniteSource(LIMIT 100000000, STOP false) -> d :: Discard;";
        let mut e = engine(&format!("{long} QuitWatcher(nosuch);")).unwrap();
        let s = e.run();
        assert_eq!(s.reason, StopReason::Requested);
        assert!(
            s.errors
                .iter()
                .any(|m| m.contains("no element named `nosuch`")),
            "{:?}",
            s.errors
        );
        let mut e = engine(&format!("{long} QuitWatcher(d);")).unwrap();
        let s = e.run();
        assert!(
            s.errors.iter().any(|m| m.contains("`d` has no task")),
            "{:?}",
            s.errors
        );
    }

    #[test]
    fn a_task_placed_nowhere_is_not_scheduled() {
        let mut e = engine(
            "s :: InfiniteSource(LIMIT 100000000, STOP false) -> Discard;\n\
             long :: InfiniteSource(LIMIT 100000000, STOP false) -> Discard;\n\
             StaticThreadSched(s -1);\n\
             QuitWatcher(s);",
        )
        .unwrap();
        e.start();
        let mut now = 0;
        tick(&mut e, &mut now, INTERVAL_NS);
        let summary = e.run();
        assert_eq!(summary.reason, StopReason::Requested);
        assert_eq!(read(&e, "s", "count"), "0");
    }
}
