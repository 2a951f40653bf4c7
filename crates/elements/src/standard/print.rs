//! `Print`: writes a line per packet to standard error.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};
use std::fmt::Write;

/// The `Print` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Print",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "prints packets to standard error",
    synopsis: "Print([LABEL, MAXLENGTH, KEYWORDS])",
    description: "Writes one line per packet, `LABEL: LENGTH | bytes in hex`, and passes the \
        packet on unchanged. For debugging: printing is slow.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LABEL",
            ty: "string",
            default: Some("empty"),
            doc: "text at the start of each line",
        },
        Keyword {
            name: "MAXLENGTH",
            ty: "integer",
            default: Some("24"),
            doc: "bytes shown; -1 for all",
        },
        Keyword {
            name: "TIMESTAMP",
            ty: "boolean",
            default: Some("false"),
            doc: "show the packet's timestamp",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "print at all",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> Print(ok) -> Discard;",
    see_also: &["ToDump"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let label: String = args.read_p("LABEL")?.unwrap_or_default();
    let max: i64 = args.read_p("MAXLENGTH")?.unwrap_or(24);
    let timestamp = args.read("TIMESTAMP")?.unwrap_or(false);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    Ok(Box::new(Print {
        label,
        max: usize::try_from(max).unwrap_or(usize::MAX),
        timestamp,
        active,
    }))
}

/// Prints packets.
#[derive(Debug)]
pub struct Print {
    label: String,
    max: usize,
    timestamp: bool,
    active: bool,
}

impl Print {
    /// The line printed for `p`.
    pub fn line(&self, p: &Packet) -> String {
        let mut s = String::new();
        if !self.label.is_empty() {
            let _ = write!(s, "{}: ", self.label);
        }
        if self.timestamp {
            let t = p.anno().timestamp;
            let _ = write!(s, "{}.{:09}: ", t.secs(), t.subsec_nanos());
        }
        let _ = write!(s, "{:4} |", p.len());
        for (i, b) in p.data().iter().take(self.max).enumerate() {
            if i % 4 == 0 {
                s.push(' ');
            }
            let _ = write!(s, "{b:02x}");
        }
        s
    }

    fn print(&self, b: &Batch) {
        if !self.active {
            return;
        }
        let mut out = String::new();
        for p in b.iter() {
            out.push_str(&self.line(p));
            out.push('\n');
        }
        eprint!("{out}");
    }
}

impl Element for Print {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.print(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.print(b));
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            _ => return Err(format!("no write handler `{handler}` (Print has `active`)")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format_matches_click() {
        let p = Print {
            label: "eth0 non-IP".into(),
            max: 6,
            timestamp: false,
            active: true,
        };
        let pkt = Packet::from_slice(&[0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
        assert_eq!(p.line(&pkt), "eth0 non-IP:    8 | 00010203 0405");
    }
}
