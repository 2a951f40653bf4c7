//! `bricks reproduce --compare OLD`: what changed between two runs, item
//! by item and measurement by measurement.

use super::catalogue::{self, Paper};
use super::page::outcome;
use super::store::Run;
use crate::report::Table;
use std::fmt::Write as _;

/// The comparison of `new` against `old`, as Markdown.
pub fn compare(old: &Run, new: &Run) -> String {
    let mut s = String::from("# What changed between two runs of bricks reproduce\n\n");
    let machine = |r: &Run| {
        format!(
            "{}, {} cores, Linux {}, bricks {}, {}",
            r.machine.cpu,
            r.machine.cores,
            r.machine.kernel,
            r.machine.bricks,
            if r.quick { "quick" } else { "full" }
        )
    };
    let _ = writeln!(s, "- **Old**: {}", machine(old));
    let _ = writeln!(s, "- **New**: {}", machine(new));
    if old.machine.cpu != new.machine.cpu || old.machine.cores != new.machine.cores {
        s.push_str("- The machines differ: compare ratios and counts, not rates.\n");
    }
    if old.quick != new.quick {
        s.push_str("- One run is quick and the other full: their points and repetitions differ.\n");
    }
    s.push('\n');

    let mut outcomes = Table::new(&["paper", "item", "old", "new"]);
    let mut values = Table::new(&["paper", "item", "measure", "old", "new", "verdict"]);
    let mut unchanged = 0usize;
    for p in Paper::ALL {
        let in_old = old.papers.iter().any(|k| k == p.key());
        let in_new = new.papers.iter().any(|k| k == p.key());
        if !in_old && !in_new {
            continue;
        }
        for item in catalogue::of(p) {
            let (a, b) = (outcome(item, old), outcome(item, new));
            if a.word() != b.word() {
                outcomes.push(vec![
                    p.key().into(),
                    item.id.into(),
                    a.word().into(),
                    b.word().into(),
                ]);
            }
            let olds = super::page::rows_of(item, old);
            let news = super::page::rows_of(item, new);
            for n in &news {
                match olds
                    .iter()
                    .find(|o| o.experiment == n.experiment && o.measure == n.measure)
                {
                    Some(o) if o.bricks == n.bricks && o.verdict == n.verdict => unchanged += 1,
                    Some(o) => values.push(vec![
                        p.key().into(),
                        item.id.into(),
                        n.measure.clone(),
                        o.bricks.clone(),
                        n.bricks.clone(),
                        if o.verdict == n.verdict {
                            n.verdict.clone()
                        } else {
                            format!("{} -> {}", o.verdict, n.verdict)
                        },
                    ]),
                    None => values.push(vec![
                        p.key().into(),
                        item.id.into(),
                        n.measure.clone(),
                        "-".into(),
                        n.bricks.clone(),
                        format!("new: {}", n.verdict),
                    ]),
                }
            }
            for o in &olds {
                if !news
                    .iter()
                    .any(|n| n.experiment == o.experiment && n.measure == o.measure)
                {
                    values.push(vec![
                        p.key().into(),
                        item.id.into(),
                        o.measure.clone(),
                        o.bricks.clone(),
                        "-".into(),
                        "gone".into(),
                    ]);
                }
            }
        }
    }
    s.push_str("## Outcomes that changed\n\n");
    if outcomes.rows.is_empty() {
        s.push_str("None.\n\n");
    } else {
        let _ = writeln!(s, "{}", outcomes.render());
    }
    s.push_str("## Measurements that changed\n\n");
    if values.rows.is_empty() {
        s.push_str("None.\n\n");
    } else {
        let _ = writeln!(s, "{}", values.render());
    }
    let _ = writeln!(s, "{unchanged} measurements are the same in both.");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_listed_and_sameness_counted() {
        let old = crate::reproduce::page::tests::fixture();
        let mut new = old.clone();
        // Fig. 16 now holds with a new value; Fig. 17's row is gone.
        let u = new
            .units
            .iter_mut()
            .find(|u| u.key == "vr:scaling")
            .unwrap();
        u.rows[0].bricks = "0.85".into();
        u.rows[0].verdict = "holds".into();
        let u = new
            .units
            .iter_mut()
            .find(|u| u.key == "vr:fairness")
            .unwrap();
        u.rows.remove(0);
        let c = compare(&old, &new);
        assert!(c.contains("| vr    | Fig. 16 | differs | agrees  |"), "{c}");
        assert!(c.contains("| vr    | Fig. 17 | agrees  | not run |"), "{c}");
        assert!(c.contains("| 0.45 | 0.85 | differs -> holds |"), "{c}");
        assert!(c.contains("| gone"), "{c}");
        assert!(c.contains("3 measurements are the same in both."), "{c}");
        let same = compare(&old, &old);
        assert!(same.contains("## Outcomes that changed\n\nNone."));
    }
}
