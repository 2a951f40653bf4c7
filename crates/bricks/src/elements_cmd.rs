//! `bricks elements`: the element list and manuals.

use bricks_element::ElementClass;
use std::fmt::Write;
use std::process::ExitCode;

/// The manual page of one class, as text.
pub fn manual_text(c: &ElementClass) -> String {
    let m = c.manual;
    let mut s = String::new();
    let _ = writeln!(s, "{} - {}\n", c.name, m.summary);
    let _ = writeln!(s, "SYNOPSIS\n    {}\n", m.synopsis);
    let _ = writeln!(
        s,
        "PORTS\n    {}\n    port count {}, processing {}\n",
        m.ports, c.ports, c.processing
    );
    let _ = writeln!(s, "DESCRIPTION");
    for (i, para) in m.description.split("\n\n").enumerate() {
        if i > 0 {
            s.push('\n');
        }
        for line in wrap(para, 76) {
            let _ = writeln!(s, "    {line}");
        }
    }
    s.push('\n');
    if !m.keywords.is_empty() {
        let _ = writeln!(s, "KEYWORDS");
        for k in m.keywords {
            let default = match k.default {
                Some(d) => format!("default {d}"),
                None => "mandatory".to_string(),
            };
            let _ = writeln!(s, "    {} ({}, {})", k.name, k.ty, default);
            for line in wrap(k.doc, 72) {
                let _ = writeln!(s, "        {line}");
            }
        }
        s.push('\n');
    }
    if !m.counters.is_empty() {
        let _ = writeln!(s, "COUNTERS");
        for (n, d) in m.counters {
            let _ = writeln!(s, "    {n:<20} {d}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "EXAMPLE\n    {}\n", m.example);
    if !m.see_also.is_empty() {
        let _ = writeln!(s, "SEE ALSO\n    {}", m.see_also.join(", "));
    }
    s
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + w.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

pub fn elements(name: Option<&str>) -> anyhow::Result<ExitCode> {
    let reg = bricks_elements::registry();
    match name {
        None => {
            for c in reg.classes() {
                println!("{:<18} {}", c.name, c.manual.summary);
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(n) => match reg.get(n) {
            Some(c) => {
                print!("{}", manual_text(c));
                Ok(ExitCode::SUCCESS)
            }
            None if bricks_runtime::is_click_class(n) => {
                eprintln!("error: `{n}` is a Click element that bricks does not implement yet");
                eprintln!("`bricks elements` lists the ones it has");
                Ok(ExitCode::from(2))
            }
            None => {
                let hint = bricks_config::suggest(n, reg.names())
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                eprintln!("error: no element class `{n}`{hint}");
                eprintln!("`bricks elements` lists them all");
                Ok(ExitCode::from(2))
            }
        },
    }
}
