//! Results as tables: each experiment's own, and the summary with a row
//! per claim: the paper's value or shape, bricks', and a verdict with its
//! reason. Tables are Markdown, so that they paste into BENCHMARKS.md.

use std::fmt;

/// How a measurement compares with the paper (or with a goal).
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The paper's value or shape holds here, or the goal is met.
    Holds(String),
    /// It does not; the text says how and, where known, why.
    Differs(String),
    /// The experiment could not be run (an element it needs is missing).
    NotRun(String),
}

impl Verdict {
    /// `Holds(why)` when `ok`, else `Differs(why)`.
    pub fn from_check(ok: bool, why: impl Into<String>) -> Verdict {
        if ok {
            Verdict::Holds(why.into())
        } else {
            Verdict::Differs(why.into())
        }
    }

    /// Whether the paper's value, shape or goal holds.
    pub fn holds(&self) -> bool {
        matches!(self, Verdict::Holds(_))
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Holds(why) => write!(f, "holds: {why}"),
            Verdict::Differs(why) => write!(f, "differs: {why}"),
            Verdict::NotRun(why) => write!(f, "not run: {why}"),
        }
    }
}

/// One line of the summary.
#[derive(Debug, Clone)]
pub struct Row {
    /// Which figure (`Fig. 16`).
    pub experiment: String,
    /// What is compared.
    pub measure: String,
    /// The paper's value, shape or goal.
    pub paper: String,
    /// What bricks did here.
    pub bricks: String,
    /// The comparison.
    pub verdict: Verdict,
}

/// A table: a header and rows of cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column titles.
    pub header: Vec<String>,
    /// Cells, row by row.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// As Markdown, columns padded to line up.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let mut width = vec![3usize; n];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (w, c) in width.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for (i, w) in width.iter().enumerate() {
                let c = cells.get(i).map_or("", String::as_str);
                let pad = w - c.chars().count().min(*w);
                s.push(' ');
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
                s.push_str(" |");
            }
            s.push('\n');
            s
        };
        let mut s = line(&self.header);
        s.push('|');
        for w in &width {
            s.push_str(&"-".repeat(w + 2));
            s.push('|');
        }
        s.push('\n');
        for r in &self.rows {
            s.push_str(&line(r));
        }
        s
    }
}

/// The summary table of `rows`.
pub fn summary(rows: &[Row]) -> Table {
    let mut t = Table::new(&["experiment", "measure", "paper", "bricks", "verdict"]);
    for r in rows {
        t.push(vec![
            r.experiment.clone(),
            r.measure.clone(),
            r.paper.clone(),
            r.bricks.clone(),
            r.verdict.to_string(),
        ]);
    }
    t
}

/// Whether `value` is within `tolerance` (a fraction) of `target`.
pub fn within(value: f64, target: f64, tolerance: f64) -> bool {
    (value - target).abs() <= tolerance * target.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_relative() {
        assert!(within(0.66, 2.0 / 3.0, 0.05));
        assert!(within(0.70, 2.0 / 3.0, 0.05));
        assert!(!within(0.71, 2.0 / 3.0, 0.05));
        assert!(!within(0.60, 2.0 / 3.0, 0.05));
        assert!(within(1.0, 1.0, 0.0));
    }

    #[test]
    fn verdicts_say_why() {
        assert_eq!(Verdict::from_check(true, "flat").to_string(), "holds: flat");
        assert_eq!(
            Verdict::from_check(false, "1.3x").to_string(),
            "differs: 1.3x"
        );
        assert!(!Verdict::NotRun("no X".into()).holds());
    }

    #[test]
    fn tables_line_up() {
        let mut t = Table::new(&["a", "long header"]);
        t.push(vec!["wide cell".into(), "x".into()]);
        let s = t.render();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|l| l.len() == lines[0].len()));
        assert_eq!(lines[2], "| wide cell | x           |");
    }
}
