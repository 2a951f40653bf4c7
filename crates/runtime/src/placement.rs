//! Where each task runs and how large a share of its worker it gets: the
//! arguments of `ScheduleInfo` and `StaticThreadSched` resolved against
//! the element names of a checked configuration.
//!
//! Tickets follow Click's stride scheduler (`include/click/task.hh`,
//! `elements/standard/scheduleinfo.cc`): a task has [`DEFAULT_TICKETS`]
//! unless a `ScheduleInfo` gives it a parameter, which multiplies them. An
//! information element inside a compound element speaks for that
//! compound's components (its names are relative to the compound); an
//! outer one may scale a whole compound (`ScheduleInfo(c 4)`) or override
//! an inner setting (`ScheduleInfo(c/i 10.5)`), as Click documents. The
//! final count is kept within 1 and [`MAX_TICKETS`].

use bricks_config::Diagnostic;
use bricks_element::{TaskDirective, TaskSetting};
use std::collections::HashMap;

/// A task's tickets when nothing says otherwise (Click's
/// `Task::DEFAULT_TICKETS`): a `ScheduleInfo` parameter of 1.
pub const DEFAULT_TICKETS: u32 = 1 << 10;

/// The most tickets a task may have (Click's `Task::MAX_TICKETS`).
pub const MAX_TICKETS: u32 = 1 << 15;

/// Which workers run an element's task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The default: a source that does not run on every worker by itself
    /// runs on worker 0; every other task runs on every worker.
    Default,
    /// Worker `n` modulo the number of workers (`StaticThreadSched`).
    Worker(usize),
    /// No worker (`StaticThreadSched(e -1)`, Click's quiescent thread).
    Nowhere,
}

impl Placement {
    /// Whether worker `worker` of `workers` runs the task. `every` says
    /// whether the element's task runs on every worker by itself (a device
    /// receiver), `source` whether it is a source.
    pub fn runs_on(self, worker: usize, workers: usize, source: bool, every: bool) -> bool {
        match self {
            Placement::Default => !source || every || worker == 0,
            Placement::Worker(n) => worker == n % workers.max(1),
            Placement::Nowhere => false,
        }
    }
}

/// What one element is, for resolution.
pub(crate) struct Subject<'a> {
    /// Its full name (`outer/inner` inside compounds).
    pub name: &'a str,
    /// It has a task.
    pub task: bool,
    /// It is a source whose task runs on every worker by itself.
    pub every_worker_source: bool,
    /// Its class, for messages.
    pub class: &'a str,
}

/// The part of `name` up to and including its last `/` (empty at top
/// level): the compound an element sits in.
fn context(name: &str) -> &str {
    match name.rfind('/') {
        Some(i) => &name[..=i],
        None => "",
    }
}

/// Element names in order, to find an element or a compound's components
/// by prefix in logarithmic time.
struct Names<'a> {
    exact: HashMap<&'a str, usize>,
    sorted: Vec<(&'a str, usize)>,
}

impl<'a> Names<'a> {
    fn new(subjects: &[Subject<'a>]) -> Names<'a> {
        let mut sorted: Vec<(&str, usize)> = subjects
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name, i))
            .collect();
        sorted.sort_unstable();
        Names {
            exact: sorted.iter().copied().collect(),
            sorted,
        }
    }

    /// The elements inside compound `name`.
    fn components(&self, name: &str) -> impl Iterator<Item = usize> + '_ {
        let prefix = format!("{name}/");
        let start = self.sorted.partition_point(|(n, _)| *n < prefix.as_str());
        self.sorted[start..]
            .iter()
            .take_while(move |(n, _)| n.starts_with(&prefix))
            .map(|&(_, i)| i)
    }

    /// Whether `name` is an element or a compound.
    fn names_something(&self, name: &str) -> bool {
        self.exact.contains_key(name) || self.components(name).next().is_some()
    }
}

fn error(d: &TaskDirective, message: String, help: &str) -> Diagnostic {
    Diagnostic {
        span: d.span,
        message,
        help: Some(help.to_string()),
        notes: Vec::new(),
    }
}

/// What [`resolve`] finds: each element's tickets and placement, and
/// warnings by the index of the information element that gave them.
pub(crate) type Resolved = (Vec<u32>, Vec<Placement>, Vec<(usize, String)>);

/// Resolves every directive: each element's tickets and placement, in the
/// order of `subjects`. `directives` lists, for each information element
/// (by index into `subjects`, in declaration order), what it says.
pub(crate) fn resolve(
    subjects: &[Subject<'_>],
    directives: &[(usize, Vec<TaskDirective>)],
) -> Result<Resolved, Vec<Diagnostic>> {
    let n = subjects.len();
    let mut tickets = vec![DEFAULT_TICKETS; n];
    let mut places = vec![Placement::Default; n];
    if directives.iter().all(|(_, d)| d.is_empty()) {
        return Ok((tickets, places, Vec::new()));
    }
    let names = Names::new(subjects);
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    // ScheduleInfo: one table of parameters per compound context, later
    // definitions overriding earlier ones (Click's NameDB).
    let mut dbs: HashMap<&str, HashMap<&str, f64>> = HashMap::new();
    for (info, list) in directives {
        let ctx = context(subjects[*info].name);
        for d in list {
            match d.setting {
                TaskSetting::Tickets(v) => {
                    let full = format!("{ctx}{}", d.element);
                    if !names.names_something(&full) {
                        errors.push(error(
                            d,
                            format!("ScheduleInfo: `{}` does not name an element", d.element),
                            "name an element or a compound element of this configuration \
                             (inside a compound, relative to it)",
                        ));
                        continue;
                    }
                    dbs.entry(ctx).or_default().insert(d.element.as_str(), v);
                }
                TaskSetting::Thread(t) => {
                    let place = if t < 0 {
                        Placement::Nowhere
                    } else {
                        Placement::Worker(t as usize)
                    };
                    let targets = thread_targets(&names, ctx, &d.element);
                    if targets.is_empty() {
                        errors.push(error(
                            d,
                            format!(
                                "StaticThreadSched: `{}` does not name an element",
                                d.element
                            ),
                            "name an element or a compound element of this configuration \
                             (inside a compound, relative to it)",
                        ));
                        continue;
                    }
                    for i in targets {
                        let s = &subjects[i];
                        if s.every_worker_source {
                            // Click would run it on that thread; here each
                            // worker reads the device queues it owns. The
                            // configuration runs, its placement left out.
                            warnings.push((
                                *info,
                                format!(
                                    "warning: `{}` ({}) stays on every worker, each \
                                     instance reading the device queues its own worker owns; \
                                     its placement on {} is ignored (the queues after it are \
                                     shared with the workers that pull them)",
                                    s.name,
                                    s.class,
                                    match place {
                                        Placement::Nowhere => "no thread".to_string(),
                                        _ => format!("thread {t}"),
                                    }
                                ),
                            ));
                            continue;
                        }
                        places[i] = place;
                    }
                }
            }
        }
    }
    if !dbs.is_empty() {
        // Innermost contexts first, so that outer ones override them.
        let mut order: Vec<(&str, &HashMap<&str, f64>)> =
            dbs.iter().map(|(k, v)| (*k, v)).collect();
        order.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        for (i, s) in subjects.iter().enumerate().filter(|(_, s)| s.task) {
            tickets[i] = tickets_of(s.name, &order);
        }
    }
    if errors.is_empty() {
        Ok((tickets, places, warnings))
    } else {
        Err(errors)
    }
}

/// The elements a `StaticThreadSched` argument names, as Click finds them:
/// the element `name` seen from context `ctx` (then from each enclosing
/// context), else every component of the compound `ctx` + `name`.
fn thread_targets(names: &Names<'_>, ctx: &str, name: &str) -> Vec<usize> {
    let mut c = ctx;
    loop {
        if let Some(&i) = names.exact.get(format!("{c}{name}").as_str()) {
            return vec![i];
        }
        if c.is_empty() {
            break;
        }
        c = context(&c[..c.len() - 1]);
    }
    names.components(&format!("{ctx}{name}")).collect()
}

/// Click's `ScheduleInfo::query`: the parameters of the element and of
/// each compound around it, multiplied, innermost tables read first.
fn tickets_of(name: &str, dbs: &[(&str, &HashMap<&str, f64>)]) -> u32 {
    // The compounds around the element, outermost first, then itself.
    let ancestors: Vec<&str> = name
        .match_indices('/')
        .map(|(i, _)| &name[..i])
        .chain(std::iter::once(name))
        .collect();
    let mut params = vec![1.0f64; ancestors.len()];
    for &(ctx, db) in dbs {
        if !name.starts_with(ctx) {
            continue;
        }
        // A table that sets a deeper name cancels the settings of the
        // compounds around it (Click's "erase intermediate settings":
        // `ScheduleInfo(c 4, c/i 10.5)` gives `c/i` 10.5, not 42).
        let mut set = false;
        for k in (0..ancestors.len()).rev() {
            let a = ancestors[k];
            if a.len() <= ctx.len() {
                break;
            }
            if set {
                params[k] = 1.0;
            } else if let Some(&v) = db.get(&a[ctx.len()..]) {
                params[k] = v;
                set = true;
            }
        }
    }
    let t = params.iter().product::<f64>() * DEFAULT_TICKETS as f64;
    t.round().clamp(1.0, MAX_TICKETS as f64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_config::Span;

    fn subjects<'a>(names: &[&'a str]) -> Vec<Subject<'a>> {
        names
            .iter()
            .map(|n| Subject {
                name: n,
                task: !n.contains("Info") && !n.contains("Sched"),
                every_worker_source: n.ends_with("fd"),
                class: "X",
            })
            .collect()
    }

    fn d(element: &str, setting: TaskSetting, at: usize) -> TaskDirective {
        TaskDirective {
            element: element.into(),
            span: Span {
                file: 0,
                start: at,
                end: at + 1,
            },
            setting,
        }
    }

    use TaskSetting::{Thread, Tickets};

    #[test]
    fn parameters_scale_the_default() {
        let s = subjects(&["a", "b", "Info@3"]);
        let (t, _, _) = resolve(
            &s,
            &[(2, vec![d("a", Tickets(2.0), 0), d("b", Tickets(0.5), 1)])],
        )
        .unwrap();
        assert_eq!(t, vec![2048, 512, 1024]);
    }

    #[test]
    fn compounds_scale_and_outer_tables_override() {
        // Click's documented example: `c/i` ends with 4 x 0.5 = 2.
        let s = subjects(&["c/i", "c/Info@2", "Info@4", "x"]);
        let inner = (1, vec![d("i", Tickets(0.5), 0)]);
        let (t, _, _) = resolve(&s, &[inner.clone(), (2, vec![d("c", Tickets(4.0), 1)])]).unwrap();
        assert_eq!(t[0], 2048);
        assert_eq!(t[3], 1024);
        // An outer setting of `c/i` overrides both.
        let (t, _, _) = resolve(
            &s,
            &[
                inner,
                (2, vec![d("c", Tickets(4.0), 1), d("c/i", Tickets(10.5), 2)]),
            ],
        )
        .unwrap();
        assert_eq!(t[0], 10752);
    }

    #[test]
    fn tickets_are_clamped() {
        let s = subjects(&["a", "b", "Info@3"]);
        let (t, _, _) = resolve(
            &s,
            &[(2, vec![d("a", Tickets(1000.0), 0), d("b", Tickets(0.0), 1)])],
        )
        .unwrap();
        assert_eq!(t[..2], [MAX_TICKETS, 1]);
    }

    #[test]
    fn unknown_names_are_located_errors() {
        let s = subjects(&["a", "Info@2"]);
        let e = resolve(&s, &[(1, vec![d("nope", Tickets(2.0), 7)])]).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].span.start, 7);
        assert!(e[0].message.contains("`nope` does not name an element"));
        let e = resolve(&s, &[(1, vec![d("nope", Thread(1), 9)])]).unwrap_err();
        assert_eq!(e[0].span.start, 9);
    }

    #[test]
    fn threads_find_elements_from_the_context_outwards_and_whole_compounds() {
        let s = subjects(&["src", "c/q", "c/u", "c/Sched@1", "d/src"]);
        let (_, p, _) = resolve(
            &s,
            &[(3, vec![d("src", Thread(1), 0), d("q", Thread(-1), 1)])],
        )
        .unwrap();
        // `src` seen from `c/` is the top-level one.
        assert_eq!(p[0], Placement::Worker(1));
        assert_eq!(p[1], Placement::Nowhere);
        assert_eq!(p[4], Placement::Default);
        let s = subjects(&["c/q", "c/u", "Sched@1"]);
        let (_, p, _) = resolve(&s, &[(2, vec![d("c", Thread(3), 0)])]).unwrap();
        assert_eq!(p[..2], [Placement::Worker(3), Placement::Worker(3)]);
    }

    #[test]
    fn a_receiver_on_every_worker_stays_there_with_a_warning() {
        let s = subjects(&["fd", "Sched@1", "u"]);
        let (_, p, w) = resolve(
            &s,
            &[(1, vec![d("fd", Thread(0), 4), d("u", Thread(1), 9)])],
        )
        .unwrap();
        assert_eq!(
            p,
            [Placement::Default, Placement::Default, Placement::Worker(1)]
        );
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].0, 1);
        assert!(w[0].1.contains("stays on every worker"), "{}", w[0].1);
        assert!(w[0].1.contains("thread 0"), "{}", w[0].1);
    }

    #[test]
    fn placement_modulo_workers() {
        assert!(Placement::Worker(5).runs_on(1, 2, true, false));
        assert!(!Placement::Worker(5).runs_on(0, 2, true, false));
        assert!(Placement::Default.runs_on(0, 2, true, false));
        assert!(!Placement::Default.runs_on(1, 2, true, false));
        assert!(Placement::Default.runs_on(1, 2, false, false));
        assert!(Placement::Default.runs_on(1, 2, true, true));
        assert!(!Placement::Nowhere.runs_on(0, 1, false, false));
    }
}
