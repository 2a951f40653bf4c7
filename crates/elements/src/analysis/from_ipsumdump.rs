//! `FromIPSummaryDump`: reads packets described by an IP summary dump.

use super::info::{self, Field, Record};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};
use bricks_packet::{Packet, Timestamp, DEFAULT_BURST, MAX_BATCH};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::time::Instant;

/// The `FromIPSummaryDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromIPSummaryDump",
    ports: "0/1",
    processing: "/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reads packets from an IP summary dump",
    synopsis: "FromIPSummaryDump(FILENAME [, KEYWORDS])",
    description: "Reads the text that ToIPSummaryDump writes and pushes one IPv4 packet per \
        line (COUNT copies when the line has a count field, up to 1024), with a TCP, UDP or \
        ICMP header as the protocol says and zero bytes for the payload length (cut at 1500 \
        bytes; the IP length keeps the whole). The `!data` line names the fields of the \
        lines after it (DEFAULT_CONTENTS or CONTENTS when the file has none, CONTENTS always \
        when given); other `!` lines and blank lines are skipped. Absent fields (`-`) are \
        zero, the TTL 100, TCP flags ACK. The IP checksum is always valid; transport \
        checksums too when CHECKSUM is true and the whole payload is present. The packet's \
        timestamp annotation is the line's, and the trace clock follows it. A malformed \
        line is skipped and counted, with a message naming the file and line; lines longer \
        than 4096 bytes are malformed.",
    ports: "no inputs; one push output",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the dump to read; `-` is standard input (mandatory unless DATA is given)",
        },
        Keyword {
            name: "DATA",
            ty: "string",
            default: Some("none"),
            doc: "the dump's text itself, instead of FILENAME",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router when the file is done",
        },
        Keyword {
            name: "TIMING",
            ty: "boolean",
            default: Some("false"),
            doc: "replay at the pace of the timestamps",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "read at all (false: wait for `active` to be written)",
        },
        Keyword {
            name: "ZERO",
            ty: "boolean",
            default: Some("true"),
            doc: "payload bytes are zero (they always are)",
        },
        Keyword {
            name: "CHECKSUM",
            ty: "boolean",
            default: Some("false"),
            doc: "set valid TCP, UDP and ICMP checksums",
        },
        Keyword {
            name: "PROTO",
            ty: "IP protocol",
            default: Some("TCP"),
            doc: "protocol of lines that give none",
        },
        Keyword {
            name: "MULTIPACKET",
            ty: "boolean",
            default: Some("false"),
            doc: "emit COUNT packets for a line with a count field",
        },
        Keyword {
            name: "DEFAULT_CONTENTS",
            ty: "field names",
            default: None,
            doc: "fields of the lines when the file has no `!data` line",
        },
        Keyword {
            name: "CONTENTS",
            ty: "field names",
            default: None,
            doc: "fields of the lines, whatever the file says",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets per batch (up to 256)",
        },
    ],
    counters: &[
        ("count", "packets emitted"),
        ("bad_lines", "malformed lines skipped"),
    ],
    example: "FromIPSummaryDump(crates/elements/src/analysis/sample.ipsum, STOP true, \
        CHECKSUM true) -> Discard;",
    see_also: &["ToIPSummaryDump", "FromDump"],
};

/// Most packets one line makes under MULTIPACKET.
const MAX_COUNT: u32 = 1024;

/// Messages printed about bad lines; the rest are only counted.
const MAX_MESSAGES: u64 = 10;

fn fields_arg(v: Option<String>) -> Result<Option<Vec<Field>>, ArgError> {
    v.map(|t| info::parse_fields(&t).map_err(|e| ArgError::new(format!("bad CONTENTS: {e}"))))
        .transpose()
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: Option<PathBuf> = args.read_p("FILENAME")?;
    // Click's DATA: the dump's text itself instead of a file.
    let data: Option<String> = args.read("DATA")?;
    let stop = args.read("STOP")?.unwrap_or(false);
    let timing = args.read("TIMING")?.unwrap_or(false);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let _zero: bool = args.read("ZERO")?.unwrap_or(true);
    let checksum = args.read("CHECKSUM")?.unwrap_or(false);
    let proto: Option<String> = args.read("PROTO")?;
    let multipacket = args.read("MULTIPACKET")?.unwrap_or(false);
    let default_contents = fields_arg(args.read("DEFAULT_CONTENTS")?)?;
    let contents = fields_arg(args.read("CONTENTS")?)?;
    let burst: usize = args.read("BURST")?.unwrap_or(DEFAULT_BURST);
    let proto = match proto.as_deref().map(str::to_ascii_uppercase).as_deref() {
        None | Some("TCP" | "T") => 6,
        Some("UDP" | "U") => 17,
        Some("ICMP" | "I") => 1,
        Some(n) => n
            .parse()
            .map_err(|_| ArgError::new(format!("bad argument PROTO: `{n}`")))?,
    };
    let (input, path): (Box<dyn Read + Send>, PathBuf) = match (data, path) {
        (Some(_), Some(p)) => {
            return Err(ArgError::new(format!(
                "give FILENAME ({}) or DATA, not both",
                p.display()
            )))
        }
        (Some(d), None) => (
            Box::new(std::io::Cursor::new(d.into_bytes())),
            PathBuf::from("DATA"),
        ),
        // `-` is standard input, as in Click.
        (None, Some(p)) if p.as_os_str() == "-" => (Box::new(std::io::stdin()), p),
        (None, Some(p)) => (
            Box::new(File::open(&p).map_err(|e| ArgError::new(format!("{}: {e}", p.display())))?),
            p,
        ),
        (None, None) => {
            return Err(ArgError::new(
                "missing mandatory argument FILENAME (or DATA)",
            ))
        }
    };
    let forced = contents.is_some();
    Ok(Box::new(FromIPSummaryDump {
        reader: Some(BufReader::with_capacity(1 << 16, input)),
        fields: contents.or(default_contents).unwrap_or_default(),
        forced,
        lineno: 0,
        path,
        stop,
        timing,
        active,
        checksum,
        proto,
        multipacket,
        burst: burst.clamp(1, MAX_BATCH),
        pending: None,
        epoch: None,
        trace_epoch: None,
        count: 0,
        bad_lines: 0,
        done: false,
    }))
}

/// Reads a summary dump.
pub struct FromIPSummaryDump {
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    fields: Vec<Field>,
    /// CONTENTS given: `!data` lines are ignored.
    forced: bool,
    lineno: u64,
    path: PathBuf,
    stop: bool,
    timing: bool,
    active: bool,
    checksum: bool,
    proto: u8,
    multipacket: bool,
    burst: usize,
    /// A packet not yet due, and how many copies of it remain.
    pending: Option<(Packet, u32)>,
    epoch: Option<(Timestamp, Instant)>,
    /// The first record's time and the trace clock it was replayed at.
    trace_epoch: Option<(Timestamp, Timestamp)>,
    count: u64,
    bad_lines: u64,
    done: bool,
}

/// What one line of a dump is.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// Nothing to do: blank, or a comment.
    Skip,
    /// A `!data` line: the fields of the lines that follow.
    Data(Vec<Field>),
    /// A packet record.
    Record(Record),
}

/// Parses one line of a dump whose lines have `fields`.
pub fn parse(fields: &[Field], text: &str) -> Result<Line, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(Line::Skip);
    }
    if let Some(rest) = t.strip_prefix("!data") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return info::parse_fields(rest).map(Line::Data);
        }
    }
    if t.starts_with('!') || t.starts_with('#') {
        return Ok(Line::Skip);
    }
    if fields.is_empty() {
        return Err("no `!data` line before the first record".into());
    }
    info::parse_line(fields, t).map(Line::Record)
}

impl FromIPSummaryDump {
    /// The next line's packet and its copies, or `None` at the end.
    fn next_record(&mut self, cx: &mut Context<'_>) -> Option<(Packet, u32)> {
        if let Some(p) = self.pending.take() {
            return Some(p);
        }
        let mut buf = Vec::new();
        // Bounded: every pass consumes a line or ends the file.
        loop {
            let reader = self.reader.as_mut()?;
            buf.clear();
            let r = reader
                .by_ref()
                .take(info::MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf);
            match r {
                Ok(0) => {
                    self.reader = None;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    cx.report_error(format!("{}: {e}", self.path.display()));
                    self.reader = None;
                    return None;
                }
            }
            self.lineno += 1;
            if buf.len() > info::MAX_LINE && buf.last() != Some(&b'\n') {
                // Skip the rest of the long line.
                let mut skipped = 0u64;
                while let Ok(n) = reader.by_ref().take(1 << 16).read_until(b'\n', &mut buf) {
                    skipped += n as u64;
                    if n == 0 || buf.last() == Some(&b'\n') {
                        break;
                    }
                    buf.clear();
                }
                let _ = skipped;
                self.bad(cx, "line too long");
                continue;
            }
            let text = String::from_utf8_lossy(&buf);
            match parse(&self.fields, &text) {
                Ok(Line::Skip) => {}
                Ok(Line::Data(f)) => {
                    if !self.forced {
                        self.fields = f;
                    }
                }
                Ok(Line::Record(r)) => {
                    let n = if self.multipacket {
                        r.count.unwrap_or(1).clamp(1, MAX_COUNT)
                    } else {
                        1
                    };
                    return Some((info::build(&r, self.proto, self.checksum), n));
                }
                Err(e) => self.bad(cx, &e),
            }
        }
    }

    fn bad(&mut self, cx: &mut Context<'_>, msg: &str) {
        self.bad_lines += 1;
        if self.bad_lines <= MAX_MESSAGES {
            eprintln!(
                "{}: {}:{}: {msg}",
                cx.name(),
                self.path.display(),
                self.lineno
            );
        }
    }

    fn due(&mut self, p: &Packet) -> bool {
        if !self.timing {
            return true;
        }
        let ts = p.anno().timestamp;
        let (t0, w0) = *self.epoch.get_or_insert((ts, Instant::now()));
        w0.elapsed().as_nanos() as u64 >= ts.0.saturating_sub(t0.0)
    }

    fn fill(&mut self, out: &mut Batch, cx: &mut Context<'_>) -> usize {
        let mut n = 0;
        while n < self.burst && !out.is_full() {
            let Some((p, copies)) = self.next_record(cx) else {
                self.done = true;
                break;
            };
            let ts = p.anno().timestamp;
            let wait = if cx.trace_clock() {
                let at = if self.timing {
                    crate::io::capture::trace_due(&mut self.trace_epoch, ts, cx.now())
                } else {
                    ts
                };
                (at > cx.now()).then_some(at)
            } else {
                None
            };
            if wait.is_some() || (!cx.trace_clock() && !self.due(&p)) {
                if let Some(at) = wait {
                    cx.schedule_at(at);
                }
                self.pending = Some((p, copies));
                break;
            }
            if copies > 1 {
                self.pending = Some((p.duplicate(), copies - 1));
            }
            let _ = out.push(p);
            n += 1;
        }
        self.count += n as u64;
        n
    }
}

impl Element for FromIPSummaryDump {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if self.done {
            if self.stop {
                cx.request_stop();
            }
            return TaskResult::Done;
        }
        if !self.active {
            return TaskResult::Idle;
        }
        let mut b = Batch::new();
        let n = self.fill(&mut b, cx);
        cx.push(0, &mut b);
        if n > 0 {
            TaskResult::Worked
        } else if self.done {
            self.run_task(cx)
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("bad_lines", self.bad_lines);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (FromIPSummaryDump has `active`)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_lines_round_trip() {
        let text = include_str!("sample.ipsum");
        let mut fields = Vec::new();
        let mut records = 0;
        for l in text.lines() {
            match parse(&fields, l).unwrap() {
                Line::Skip => {}
                Line::Data(f) => fields = f,
                Line::Record(r) => {
                    let p = info::build(&r, 6, true);
                    assert_eq!(info::line(&fields, &p), l);
                    records += 1;
                }
            }
        }
        assert_eq!(records, 4);
    }

    #[test]
    fn record_before_data_is_refused() {
        assert!(parse(&[], "1.2.3.4").is_err());
        assert_eq!(parse(&[], "!creator x").unwrap(), Line::Skip);
        assert_eq!(parse(&[], "   ").unwrap(), Line::Skip);
        assert_eq!(
            parse(&[], "!data ip src").unwrap(),
            Line::Data(vec![Field::IpSrc])
        );
    }
}
