//! `ScheduleInfo`: how large a share of its worker each task gets (Click's
//! scheduling parameters, read when the configuration is checked).
//!
//! A worker runs its tasks by stride scheduling (see the engine): a task's
//! tickets are its share. This element carries no packets; the runtime
//! reads its arguments once (`Element::task_directives`) and gives each
//! task its tickets before any worker starts.

use bricks_element::{
    ArgError, Args, Element, ElementClass, FromArg, Manual, PortInfo, TaskDirective, TaskSetting,
};

/// The `ScheduleInfo` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ScheduleInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "gives tasks their share of a worker (scheduling parameters)",
    synopsis: "ScheduleInfo(ELEMENT PARAM, ...)",
    description: "Each argument `ELEMENT PARAM` gives the task of ELEMENT the scheduling \
        parameter PARAM, a non-negative real number: its tickets are PARAM times the default \
        1024, and a worker runs its tasks by stride scheduling, so that tasks that always \
        have work get the worker's time in proportion to their tickets (2 against 0.5: four \
        times as often). The default parameter is 1; tickets are kept between 1 and 32768. \
        \n\nAs in Click, a ScheduleInfo inside a compound element names that compound's \
        components (relative names), and an outer one may scale a whole compound \
        (`ScheduleInfo(c 4)` multiplies the parameters of everything in `c`) or override \
        an inner setting by its full name (`c/i 10.5`). A name that matches no element and \
        no compound is an error (Click ignores it); an element without a task is allowed \
        and has no use for its tickets. Tickets share one worker's time between the tasks \
        of that worker; which worker runs a task is StaticThreadSched's business.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "a :: InfiniteSource(LIMIT 2000, STOP true) -> Counter -> Discard; \
        b :: InfiniteSource -> Counter -> Discard; ScheduleInfo(a 2, b 1);",
    see_also: &["StaticThreadSched", "StrideSched"],
};

/// The arguments as read: `ELEMENT PARAM` each.
fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut directives = Vec::new();
    for (text, span) in args.rest() {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words[..] {
            [] => {}
            [element, param] => {
                let v = f64::from_arg(param)
                    .ok()
                    .filter(|v| *v >= 0.0)
                    .ok_or_else(|| {
                        ArgError::at(
                            span,
                            format!(
                                "bad scheduling parameter `{param}` for `{element}`: expected \
                                 a non-negative real number"
                            ),
                        )
                    })?;
                directives.push(TaskDirective {
                    element: element.to_string(),
                    span,
                    setting: TaskSetting::Tickets(v),
                });
            }
            _ => {
                return Err(ArgError::at(
                    span,
                    format!("expected `ELEMENT PARAM`, found `{text}`"),
                ))
            }
        }
    }
    Ok(Box::new(ScheduleInfo { directives }))
}

/// Holds the parameters for the runtime; nothing at run time.
#[derive(Debug)]
pub struct ScheduleInfo {
    directives: Vec<TaskDirective>,
}

impl Element for ScheduleInfo {
    fn task_directives(&self) -> Vec<TaskDirective> {
        self.directives.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, plan, run};

    /// Two sources that always have packets, ticketed `ta` and `tb`: the
    /// packets each moved when the first reached its limit.
    fn race(ta: &str, tb: &str, limit: u64) -> (u64, u64) {
        let s = run(&format!(
            "a :: InfiniteSource(LIMIT {limit}, STOP true) -> ca :: Counter -> Discard; \
             b :: InfiniteSource -> cb :: Counter -> Discard; ScheduleInfo(a {ta}, b {tb});"
        ));
        (count(&s, "ca", "count"), count(&s, "cb", "count"))
    }

    #[test]
    fn saturated_sources_share_by_tickets() {
        let (a, b) = race("2", "1", 64_000);
        assert_eq!(a, 64_000);
        let ratio = a as f64 / b as f64;
        assert!((ratio - 2.0).abs() / 2.0 < 0.05, "{a}:{b}");
        let (a, b) = race("0.5", "2", 32_000);
        let ratio = b as f64 / a as f64;
        assert!((ratio - 4.0).abs() / 4.0 < 0.05, "{a}:{b}");
        // Equal tickets: round robin, one batch each in turn.
        let (a, b) = race("1", "1", 32_000);
        assert!(a.abs_diff(b) <= 32, "{a}:{b}");
    }

    #[test]
    fn compound_parameters_scale_their_components() {
        let s = run(
            "elementclass Gen { s :: InfiniteSource -> output; ScheduleInfo(s 0.5); } \
             a :: InfiniteSource(LIMIT 40000, STOP true) -> ca :: Counter -> Discard; \
             g :: Gen -> cg :: Counter -> Discard; ScheduleInfo(g 4, a 1);",
        );
        // g/s: 4 x 0.5 = 2 against 1.
        let (a, g) = (count(&s, "ca", "count"), count(&s, "cg", "count"));
        let ratio = g as f64 / a as f64;
        assert!((ratio - 2.0).abs() / 2.0 < 0.05, "{a}:{g}");
        let p = plan(
            "elementclass Gen { s :: InfiniteSource -> output; ScheduleInfo(s 0.5); } \
             g :: Gen -> Discard; ScheduleInfo(g 4, g/s 3);",
        )
        .unwrap();
        let s = p.elements.iter().find(|e| e.name == "g/s").unwrap();
        assert_eq!(s.tickets, 3072);
    }

    #[test]
    fn bad_arguments_are_located() {
        let e = plan("a :: InfiniteSource -> Discard; ScheduleInfo(a 2, nobody 3);").unwrap_err();
        assert!(e.contains("`nobody` does not name an element"), "{e}");
        assert!(e.contains("<test>:1:"), "{e}");
        let e = plan("a :: InfiniteSource -> Discard; ScheduleInfo(a -2);").unwrap_err();
        assert!(e.contains("non-negative real number"), "{e}");
        let e = plan("a :: InfiniteSource -> Discard; ScheduleInfo(a 2 3);").unwrap_err();
        assert!(e.contains("expected `ELEMENT PARAM`"), "{e}");
        // Empty arguments are allowed, as in Click.
        plan("a :: InfiniteSource -> Discard; ScheduleInfo(a 2, );").unwrap();
    }
}
