//! The report: one document, written as Markdown and as HTML, with per
//! figure or table the paper's setup and values, bricks' on this machine,
//! the comparison, a verdict and the plots.

use super::catalogue::{self, Item, Kind, Paper};
use super::store::{Run, StoredRow, UnitRun};
use crate::report::Table;
use std::fmt::Write as _;

/// What became of one figure or table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every comparison holds.
    Agrees,
    /// At least one differs (the rows say how and why).
    Differs,
    /// It should have been measured but was not; why.
    NotRun(String),
    /// Not reproducible here; why.
    NotReproducible(String),
    /// A diagram, nothing to measure.
    Diagram,
}

impl Outcome {
    /// A short word for tables.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Agrees => "agrees",
            Outcome::Differs => "differs",
            Outcome::NotRun(_) => "not run",
            Outcome::NotReproducible(_) => "not reproducible",
            Outcome::Diagram => "diagram",
        }
    }
}

/// The rows of `run` that belong to `item`.
pub fn rows_of<'r>(item: &Item, run: &'r Run) -> Vec<&'r StoredRow> {
    let Some(u) = item.unit.and_then(|k| run.unit(k)) else {
        return Vec::new();
    };
    u.rows
        .iter()
        .filter(|r| catalogue::row_belongs(item, &r.experiment))
        .collect()
}

/// The outcome of `item` in `run`.
pub fn outcome(item: &Item, run: &Run) -> Outcome {
    match item.kind {
        Kind::Diagram => return Outcome::Diagram,
        Kind::NotReproducible(why) => return Outcome::NotReproducible(why.into()),
        Kind::Rerun | Kind::Ratio(_) => {}
    }
    let Some(key) = item.unit else {
        return Outcome::NotRun("no run measures it".into());
    };
    let Some(u) = run.unit(key) else {
        return Outcome::NotRun(format!("{key} was not run"));
    };
    let rows = rows_of(item, run);
    let measured: Vec<_> = rows.iter().filter(|r| r.verdict != "not run").collect();
    if measured.is_empty() {
        let why = rows
            .iter()
            .map(|r| r.why.clone())
            .chain(u.error.clone())
            .next()
            .unwrap_or_else(|| format!("{key} gave no result for it"));
        return Outcome::NotRun(why);
    }
    if measured.iter().any(|r| r.verdict == "differs") {
        Outcome::Differs
    } else {
        Outcome::Agrees
    }
}

/// The plots of `item` among its unit's: files named `figN...` for
/// `Fig. N`, `sN...` for `§N.M`.
pub fn plots_of<'r>(item: &Item, u: &'r UnitRun) -> Vec<&'r str> {
    let prefix = match catalogue::numbers(item.id) {
        Some(("Fig", _)) => "fig",
        Some(("§", _)) => "s",
        _ => return Vec::new(),
    };
    let Some((_, ns)) = catalogue::numbers(item.id) else {
        return Vec::new();
    };
    u.plots
        .iter()
        .filter(|p| {
            let stem = p.rsplit('/').next().unwrap_or(p);
            let digits: String = stem
                .strip_prefix(prefix)
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            digits.parse::<u32>().is_ok_and(|n| ns.contains(&n))
        })
        .map(String::as_str)
        .collect()
}

/// A piece of the document.
#[derive(Debug, Clone)]
enum Block {
    Heading(u8, String),
    Para(String),
    /// A list of `label: text` lines.
    Facts(Vec<(String, String)>),
    Table(Table),
    Image {
        alt: String,
        src: String,
    },
    Link {
        text: String,
        href: String,
    },
}

fn build(run: &Run, papers: &[Paper]) -> Vec<Block> {
    let mut d = Vec::new();
    d.push(Block::Heading(
        1,
        "bricks reruns the papers it is built from".into(),
    ));
    d.push(Block::Para(
        "Each figure and table of the papers, with the paper's setup and values beside bricks' on \
         this machine, the comparison and a verdict. Absolute rates need the papers' hardware, so \
         most experiments compare ratios, counts and shapes measured in one run; the kind of each \
         says which."
            .into(),
    ));
    let m = &run.machine;
    let busy: Vec<&str> = run
        .units
        .iter()
        .filter(|u| u.busy())
        .map(|u| u.key.as_str())
        .collect();
    d.push(Block::Facts(vec![
        ("Machine".into(), format!("{}, {} cores, Linux {}", m.cpu, m.cores, m.kernel)),
        (
            "AF_XDP".into(),
            match &m.af_xdp {
                Some(mode) => format!("{mode}, as bench io's router opened r0 (routebricks:io)"),
                None => "not opened in this run (routebricks:io did not run)".into(),
            },
        ),
        ("bricks".into(), m.bricks.clone()),
        (
            "Run".into(),
            format!(
                "{} (started {} s after the epoch)",
                if run.quick { "quick (--quick)" } else { "full" },
                run.started
            ),
        ),
        ("Command".into(), run.command.clone()),
        (
            "Load".into(),
            if busy.is_empty() {
                "the machine was idle before every experiment".into()
            } else {
                format!(
                    "others used more than {:.0} % of the CPU before {}; those results are marked busy",
                    super::store::BUSY * 100.0,
                    busy.join(", ")
                )
            },
        ),
    ]));

    d.push(Block::Heading(2, "Summary".into()));
    let mut t = Table::new(&[
        "paper",
        "figures and tables",
        "agree",
        "differ",
        "not run",
        "not reproducible",
        "diagrams",
    ]);
    for &p in papers {
        let mut n = [0usize; 5];
        for i in catalogue::of(p) {
            let k = match outcome(i, run) {
                Outcome::Agrees => 0,
                Outcome::Differs => 1,
                Outcome::NotRun(_) => 2,
                Outcome::NotReproducible(_) => 3,
                Outcome::Diagram => 4,
            };
            n[k] += 1;
        }
        let mut row = vec![p.key().to_string(), n.iter().sum::<usize>().to_string()];
        row.extend(n.iter().map(|x| x.to_string()));
        t.push(row);
    }
    d.push(Block::Table(t));
    let mut t = Table::new(&["paper", "item", "kind", "outcome", "why"]);
    for &p in papers {
        for i in catalogue::of(p) {
            let o = outcome(i, run);
            let why = match &o {
                Outcome::NotRun(w) | Outcome::NotReproducible(w) => w.clone(),
                Outcome::Differs => first_why(i, run, "differs"),
                Outcome::Agrees => first_why(i, run, "holds"),
                Outcome::Diagram => String::new(),
            };
            t.push(vec![
                p.key().into(),
                i.id.into(),
                i.kind.label().into(),
                o.word().into(),
                why,
            ]);
        }
    }
    d.push(Block::Table(t));

    for &p in papers {
        d.push(Block::Heading(2, p.title().into()));
        d.push(Block::Facts(vec![(
            "The paper's setup".into(),
            p.setup().into(),
        )]));
        for i in catalogue::of(p) {
            item_blocks(&mut d, i, run);
        }
    }
    d
}

fn first_why(i: &Item, run: &Run, verdict: &str) -> String {
    rows_of(i, run)
        .into_iter()
        .find(|r| r.verdict == verdict)
        .map(|r| r.why.clone())
        .unwrap_or_default()
}

fn item_blocks(d: &mut Vec<Block>, i: &Item, run: &Run) {
    d.push(Block::Heading(3, format!("{}: {}", i.id, i.title)));
    let o = outcome(i, run);
    let mut facts = vec![(
        "Kind".into(),
        match i.kind {
            Kind::Ratio(what) => format!("rerun as a ratio or count: {what}"),
            Kind::Rerun => "rerun as in the paper".into(),
            Kind::NotReproducible(why) => format!("not reproducible here: {why}"),
            Kind::Diagram => "a diagram or description; nothing to measure".into(),
        },
    )];
    let u = i.unit.and_then(|k| run.unit(k));
    if let Some(u) = u {
        facts.push((
            "bricks' setup".into(),
            format!(
                "`{}` on this machine, {:.0} s{}",
                u.command,
                u.seconds,
                if u.busy() {
                    format!(
                        "; busy: others used {:.0} % of the CPU when it started",
                        u.busy_before * 100.0
                    )
                } else {
                    String::new()
                }
            ),
        ));
    }
    facts.push((
        "Verdict".into(),
        match &o {
            Outcome::NotRun(why) => format!("not run: {why}"),
            other => other.word().into(),
        },
    ));
    d.push(Block::Facts(facts));
    let rows = rows_of(i, run);
    if !rows.is_empty() {
        let mut t = Table::new(&["measure", "paper", "bricks", "verdict"]);
        for r in rows {
            t.push(vec![
                r.measure.clone(),
                r.paper.clone(),
                r.bricks.clone(),
                if r.why.is_empty() {
                    r.verdict.clone()
                } else {
                    format!("{}: {}", r.verdict, r.why)
                },
            ]);
        }
        d.push(Block::Table(t));
    }
    if let Some(u) = u {
        for p in plots_of(i, u) {
            d.push(Block::Image {
                alt: format!("{} {}", i.paper.key(), i.id),
                src: p.to_string(),
            });
        }
        if !u.log.is_empty() {
            d.push(Block::Link {
                text: format!("the output of {}", u.key),
                href: u.log.clone(),
            });
        }
    }
}

/// The counts per paper and a line per item that differs or was not run,
/// for the terminal.
pub fn terminal_summary(run: &Run, papers: &[Paper]) -> String {
    let mut s = String::new();
    for b in build(run, papers) {
        if let Block::Table(t) = b {
            let _ = writeln!(s, "{}", t.render());
            break;
        }
    }
    for &p in papers {
        for i in catalogue::of(p) {
            let o = outcome(i, run);
            let why = match &o {
                Outcome::Differs => first_why(i, run, "differs"),
                Outcome::NotRun(w) => w.clone(),
                _ => continue,
            };
            let why: String = why.chars().take(100).collect();
            let _ = writeln!(s, "{:<10} {:<8} {:<8} {why}", p.key(), i.id, o.word());
        }
    }
    s
}

/// The report as Markdown.
pub fn markdown(run: &Run, papers: &[Paper]) -> String {
    let mut s = String::new();
    for b in build(run, papers) {
        match b {
            Block::Heading(level, text) => {
                let _ = writeln!(s, "{} {}\n", "#".repeat(level as usize), text);
            }
            Block::Para(text) => {
                let _ = writeln!(s, "{text}\n");
            }
            Block::Facts(facts) => {
                for (k, v) in facts {
                    let _ = writeln!(s, "- **{k}**: {v}");
                }
                s.push('\n');
            }
            Block::Table(t) => {
                let mut t = t;
                for r in &mut t.rows {
                    for c in r.iter_mut() {
                        *c = c.replace('|', "\\|").replace('\n', " ");
                    }
                }
                let _ = writeln!(s, "{}", t.render());
            }
            Block::Image { alt, src } => {
                let _ = writeln!(s, "![{alt}]({src})\n");
            }
            Block::Link { text, href } => {
                let _ = writeln!(s, "[{text}]({href})\n");
            }
        }
    }
    s
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

/// `text` escaped, with Markdown's `code` and **bold** spans as HTML.
fn inline(text: &str) -> String {
    let e = esc(text);
    let mut o = String::new();
    for (n, part) in e.split('`').enumerate() {
        if n % 2 == 1 {
            let _ = write!(o, "<code>{part}</code>");
        } else {
            o.push_str(part);
        }
    }
    o
}

fn anchor(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// The report as one HTML page (the plots are the SVG files beside it).
pub fn html(run: &Run, papers: &[Paper]) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>bricks reruns its papers</title>\n<style>\n\
         body { font-family: sans-serif; max-width: 72em; margin: 2em auto; padding: 0 1em; line-height: 1.4; }\n\
         table { border-collapse: collapse; margin: 0.5em 0 1em; }\n\
         th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }\n\
         th { background: #eee; }\n\
         img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }\n\
         code { background: #f4f4f4; padding: 0 0.2em; }\n\
         td.agrees, td.holds { background: #e6f4e6; } td.differs { background: #fbeaea; }\n\
         td.not-run { background: #fff5d6; }\n\
         </style>\n</head>\n<body>\n",
    );
    for b in build(run, papers) {
        match b {
            Block::Heading(level, text) => {
                let _ = writeln!(
                    s,
                    "<h{level} id=\"{}\">{}</h{level}>",
                    anchor(&text),
                    inline(&text)
                );
            }
            Block::Para(text) => {
                let _ = writeln!(s, "<p>{}</p>", inline(&text));
            }
            Block::Facts(facts) => {
                s.push_str("<ul>\n");
                for (k, v) in facts {
                    let _ = writeln!(s, "<li><b>{}</b>: {}</li>", esc(&k), inline(&v));
                }
                s.push_str("</ul>\n");
            }
            Block::Table(t) => {
                s.push_str("<table>\n<tr>");
                for h in &t.header {
                    let _ = write!(s, "<th>{}</th>", esc(h));
                }
                s.push_str("</tr>\n");
                for r in &t.rows {
                    s.push_str("<tr>");
                    for c in r {
                        let word = c.split(':').next().unwrap_or("");
                        let class = match word {
                            "agrees" | "holds" | "differs" => word.to_string(),
                            "not run" => "not-run".into(),
                            _ => String::new(),
                        };
                        if class.is_empty() {
                            let _ = write!(s, "<td>{}</td>", inline(c));
                        } else {
                            let _ = write!(s, "<td class=\"{class}\">{}</td>", inline(c));
                        }
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</table>\n");
            }
            Block::Image { alt, src } => {
                let _ = writeln!(
                    s,
                    "<p><img src=\"{}\" alt=\"{}\"></p>",
                    esc(&src),
                    esc(&alt)
                );
            }
            Block::Link { text, href } => {
                let _ = writeln!(s, "<p><a href=\"{}\">{}</a></p>", esc(&href), esc(&text));
            }
        }
    }
    s.push_str("</body>\n</html>\n");
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::store::{Machine, VERSION};
    use super::*;

    fn row(experiment: &str, verdict: &str, why: &str) -> StoredRow {
        StoredRow {
            experiment: experiment.into(),
            measure: "aggregate rate, 1,024 routers / 1".into(),
            paper: "about 0.8".into(),
            bricks: "0.45".into(),
            verdict: verdict.into(),
            why: why.into(),
        }
    }

    /// A small stored run: Fig. 16 differs, Figs. 17 and 18 hold, Fig. 2
    /// holds and Fig. 4 differs from one unit's rows, Fig. 8's unit failed.
    pub(crate) fn fixture() -> Run {
        Run {
            version: VERSION,
            quick: true,
            started: 1_764_000_000,
            papers: vec!["vr".into()],
            machine: Machine {
                cpu: "Test CPU".into(),
                cores: 2,
                kernel: "6.1.0".into(),
                bricks: "0.1.0".into(),
                af_xdp: Some("native copy".into()),
            },
            command: "bricks reproduce vr --quick".into(),
            units: vec![
                UnitRun {
                    key: "vr:scaling".into(),
                    command: "bricks bench vr --quick --only scaling".into(),
                    seconds: 41.0,
                    busy_before: 0.02,
                    rows: vec![row("Fig. 16", "differs", "per-router cost <tags> & more")],
                    plots: vec!["plots/vr-scaling/fig16-scaling.svg".into()],
                    log: "logs/vr-scaling.log".into(),
                    ..UnitRun::default()
                },
                UnitRun {
                    key: "vr:fairness".into(),
                    command: "bricks bench vr --quick --only fairness".into(),
                    seconds: 30.0,
                    busy_before: 0.5,
                    rows: vec![
                        row("Fig. 17", "holds", "shares follow arrivals"),
                        row("Fig. 18", "holds", "2:1"),
                    ],
                    plots: vec![
                        "plots/vr-fairness/fig17-software-demux.svg".into(),
                        "plots/vr-fairness/fig18-per-router-queues.svg".into(),
                    ],
                    ..UnitRun::default()
                },
                UnitRun {
                    key: "vr:flows".into(),
                    rows: vec![
                        row("Fig. 2: rate against flows", "holds", "flat"),
                        row("Fig. 4: IP routing", "differs", "40 %"),
                    ],
                    ..UnitRun::default()
                },
                UnitRun {
                    key: "vr:mapping".into(),
                    error: Some("the worker panicked".into()),
                    ..UnitRun::default()
                },
            ],
        }
    }

    fn item(id: &str) -> &'static Item {
        catalogue::of(Paper::Vr).find(|i| i.id == id).unwrap()
    }

    #[test]
    fn outcomes_follow_the_rows() {
        let run = fixture();
        assert_eq!(outcome(item("Fig. 16"), &run), Outcome::Differs);
        assert_eq!(outcome(item("Fig. 17"), &run), Outcome::Agrees);
        assert_eq!(outcome(item("Fig. 2"), &run), Outcome::Agrees);
        assert_eq!(outcome(item("Fig. 4"), &run), Outcome::Differs);
        assert_eq!(
            outcome(item("Fig. 8"), &run),
            Outcome::NotRun("the worker panicked".into())
        );
        assert_eq!(
            outcome(item("Fig. 11"), &run),
            Outcome::NotRun("vr:shared-queue was not run".into())
        );
        assert!(
            matches!(outcome(item("Fig. 14"), &run), Outcome::NotReproducible(w) if w.contains("Xen"))
        );
        assert_eq!(outcome(item("Fig. 1"), &run), Outcome::Diagram);
        let fairness = run.unit("vr:fairness").unwrap();
        assert_eq!(
            plots_of(item("Fig. 17"), fairness),
            ["plots/vr-fairness/fig17-software-demux.svg"]
        );
        assert_eq!(
            plots_of(item("Fig. 18"), fairness),
            ["plots/vr-fairness/fig18-per-router-queues.svg"]
        );
    }

    #[test]
    fn section_plots_go_to_their_section() {
        let rb4 = catalogue::CATALOGUE
            .iter()
            .find(|i| i.paper == Paper::Routebricks && i.id == "§6.2")
            .unwrap();
        let u = UnitRun {
            key: "routebricks:cluster".into(),
            command: String::new(),
            seconds: 1.0,
            busy_before: 0.0,
            rows: Vec::new(),
            error: None,
            plots: vec![
                "plots/routebricks-cluster/s6-2-load.svg".into(),
                "plots/routebricks-cluster/s5-other.svg".into(),
                "plots/routebricks-cluster/summary.svg".into(),
            ],
            log: String::new(),
        };
        assert_eq!(
            plots_of(rb4, &u),
            ["plots/routebricks-cluster/s6-2-load.svg"]
        );
    }

    #[test]
    fn the_markdown_lists_every_item_with_its_verdict() {
        let run = fixture();
        let md = markdown(&run, &[Paper::Vr]);
        // 21 figures: Figs. 2, 17, 18 agree; 4 and 16 differ; 8, 10 and 11
        // were not run; 7 cannot be; 6 are diagrams.
        assert!(md.contains("| vr    | 21                 | 3     | 2      | 3       | 7                | 6        |"), "{md}");
        for i in catalogue::of(Paper::Vr) {
            assert!(
                md.contains(&format!("### {}: {}", i.id, i.title)),
                "{}",
                i.id
            );
        }
        assert!(md.contains("![vr Fig. 16](plots/vr-scaling/fig16-scaling.svg)"));
        assert!(md.contains("- **Verdict**: not run: the worker panicked"));
        assert!(md.contains("busy: others used 50 % of the CPU"));
        assert!(md.contains("[the output of vr:scaling](logs/vr-scaling.log)"));
        assert!(md.contains("Test CPU, 2 cores, Linux 6.1.0"));
        assert!(
            md.contains("native copy, as bench io's router opened r0"),
            "the machine section names the AF_XDP mode"
        );
    }

    #[test]
    fn the_html_is_escaped_and_balanced() {
        let run = fixture();
        let h = html(&run, &[Paper::Vr]);
        assert!(h.contains("per-router cost &lt;tags&gt; &amp; more"));
        assert!(!h.contains("<tags>"));
        assert!(h.contains("<img src=\"plots/vr-scaling/fig16-scaling.svg\""));
        assert!(h.contains("<code>bricks bench vr --quick --only scaling</code>"));
        for tag in ["table", "tr", "ul", "h3", "p"] {
            let open =
                h.matches(&format!("<{tag}>")).count() + h.matches(&format!("<{tag} ")).count();
            let close = h.matches(&format!("</{tag}>")).count();
            assert_eq!(open, close, "<{tag}>");
        }
    }
}
