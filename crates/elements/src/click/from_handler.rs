//! `FromHandler`: makes packets from what a read handler returns (Click's
//! `elements/wifi/fromhandler.cc`): once activated it reads the handler
//! again and again, each value a packet in hexadecimal, optionally after
//! a timestamp, until the handler returns nothing.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, MAX_FRAME};

/// The `FromHandler` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromHandler",
    ports: "0/1-2",
    processing: "/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "makes packets from a read handler's values",
    synopsis: "FromHandler(HANDLER)",
    description: "Once its `active` handler is written true, reads HANDLER \
        (`ELEMENT.HANDLER`) each time its task runs and pushes a packet made from the \
        value: pairs of hexadecimal digits, each a byte (a trailing odd digit is ignored), \
        after an optional `SECONDS.FRACTION | ` giving the packet's timestamp (without \
        one, the timestamp is the time it was read). A value of at most one character \
        ends the burst: `active` becomes false, and the `time` handler gives how long the \
        burst took, as `SECONDS.MICROSECONDS`. Writing `active` true again starts a new \
        burst. Like bricks' other sources, it is finished after a burst (a run whose \
        sources are all finished ends) until `active` is written again.\n\n\
        Click reads only lower-case digits, taking any other character as 0; bricks also \
        reads upper-case ones. A value of more than 2048 bytes, or a handler that cannot \
        be read, is reported on standard error and ends the burst (the value is counted \
        in `errors`). A timestamp that does not parse is reported and the time of reading \
        used, as in Click. Output 1, which Click declares but never uses, may be connected \
        and stays unused.",
    ports: "no inputs; one or two push outputs (only output 0 is used)",
    keywords: &[Keyword {
        name: "HANDLER",
        ty: "read handler (ELEMENT.HANDLER)",
        default: None,
        doc: "the handler read; positional",
    }],
    counters: &[
        ("count", "packets made"),
        (
            "errors",
            "values refused (too long) and handler reads that failed",
        ),
    ],
    example: "s :: Script(TYPE PASSIVE, return 0a0b0c); \
        FromHandler(s.run) -> Discard;",
    see_also: &["Script", "InfiniteSource"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("HANDLER")?;
    let text = text.trim();
    let (element, handler) = text
        .rsplit_once('.')
        .filter(|(e, h)| !e.is_empty() && !h.is_empty() && !h.contains(char::is_whitespace))
        .ok_or_else(|| ArgError::new(format!("HANDLER: expected ELEMENT.HANDLER, not `{text}`")))?;
    Ok(Box::new(FromHandler {
        element: element.to_string(),
        handler: handler.to_string(),
        active: false,
        ran: false,
        start: Timestamp(0),
        end: Timestamp(0),
        count: 0,
        errors: 0,
    }))
}

/// Packets from a handler.
#[derive(Debug)]
pub struct FromHandler {
    element: String,
    handler: String,
    active: bool,
    /// A burst has ended: the task is finished until `active` is written.
    ran: bool,
    start: Timestamp,
    end: Timestamp,
    count: u64,
    errors: u64,
}

/// Click's `cp_time`: `SECONDS[.FRACTION]`, the fraction to nanoseconds.
fn parse_time(text: &str) -> Option<Timestamp> {
    let t = text.trim();
    let (secs, frac) = t.split_once('.').unwrap_or((t, ""));
    if secs.is_empty() && frac.is_empty() {
        return None;
    }
    let secs = if secs.is_empty() {
        0
    } else {
        u64::from_arg(secs)
            .ok()
            .filter(|_| secs.bytes().all(|b| b.is_ascii_digit()))?
    };
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut nanos = 0u32;
    for (i, b) in frac.bytes().enumerate().take(9) {
        nanos += u32::from(b - b'0') * 10u32.pow(8 - i as u32);
    }
    Some(Timestamp::from_parts(secs, nanos))
}

/// The packet bytes and timestamp a handler value says, as Click reads
/// it; `Err` for a value too long for a packet.
fn parse_value(value: &str, now: Timestamp) -> Result<(Vec<u8>, Timestamp), String> {
    let mut t = now;
    let mut hex = value;
    if let Some(n) = value.find('|').filter(|&n| n > 0) {
        // Click takes the time up to the character before the bar (a
        // space) and the data from two characters after it.
        let ts = &value[..n - 1];
        match parse_time(ts) {
            Some(ts) => t = ts,
            None => eprintln!("parsing time failed"),
        }
        hex = value.get(n + 2..).unwrap_or("");
    }
    let digits = hex.as_bytes();
    let len = digits.len() / 2;
    if len > MAX_FRAME {
        return Err(format!(
            "{len}-byte packet is longer than {MAX_FRAME} bytes"
        ));
    }
    let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    let bytes = digits
        .chunks_exact(2)
        .map(|p| (nibble(p[0]) << 4) | nibble(p[1]))
        .collect();
    Ok((bytes, t))
}

/// Click's unparsing of a time difference: `S.UUUUUU`.
fn unparse(ns: i128) -> String {
    let sec = ns.div_euclid(1_000_000_000);
    let us = ns.rem_euclid(1_000_000_000) / 1000;
    format!("{sec}.{us:06}")
}

impl FromHandler {
    fn stop(&mut self, now: Timestamp) -> TaskResult {
        self.active = false;
        self.end = now;
        self.ran = true;
        TaskResult::Done
    }
}

impl Element for FromHandler {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.active {
            return if self.ran {
                TaskResult::Done
            } else {
                TaskResult::Idle
            };
        }
        let now = cx.now();
        let value = match cx.read_handler(&self.element, &self.handler) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("{}: {}.{}: {e}", cx.name(), self.element, self.handler);
                self.errors += 1;
                return self.stop(now);
            }
        };
        if value.len() <= 1 {
            return self.stop(now);
        }
        match parse_value(&value, now) {
            Ok((bytes, t)) => {
                if let Ok(mut p) = Packet::from_slice(&bytes) {
                    p.anno_mut().timestamp = t;
                    let mut b = Batch::new();
                    let _ = b.push(p);
                    self.count += 1;
                    cx.push(0, &mut b);
                }
                TaskResult::Worked
            }
            Err(e) => {
                eprintln!("{}: {e}", cx.name());
                self.errors += 1;
                self.stop(now)
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("errors", self.errors);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "active" => Some(self.active.to_string()),
            "time" => Some(format!(
                "{}\n",
                unparse(i128::from(self.end.0) - i128::from(self.start.0))
            )),
            _ => None,
        }
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        // Activating stamps the start with the router's clock.
        if !(write && handler == "active") {
            return None;
        }
        Some(self.write_active(value, cx.now()).map(|()| String::new()))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "active" => self.write_active(value, Timestamp::now()),
            _ => Err(format!(
                "no write handler `{handler}` (FromHandler has `active`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("active"), Handler::r("time")];
        H
    }
}

impl FromHandler {
    fn write_active(&mut self, value: &str, now: Timestamp) -> Result<(), String> {
        let on = bool::from_arg(value.trim()).map_err(|_| "'active' should be Boolean")?;
        self.active = on;
        if on {
            self.start = now;
            self.end = now;
            self.ran = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    #[test]
    fn values_as_click_reads_them() {
        let now = Timestamp(7);
        assert_eq!(
            parse_value("0a0b0c\n", now),
            Ok((vec![0x0a, 0x0b, 0x0c], now))
        );
        assert_eq!(parse_value("0A1", now), Ok((vec![0x0a], now)));
        assert_eq!(parse_value("zz", now), Ok((vec![0], now)));
        assert_eq!(
            parse_value("12.5 | ff00", now),
            Ok((vec![0xff, 0], Timestamp::from_parts(12, 500_000_000)))
        );
        // A bad time keeps the time of reading.
        assert_eq!(parse_value("x.y | ff", now), Ok((vec![0xff], now)));
        // A bar at the end: no data.
        assert_eq!(
            parse_value("1 |", now),
            Ok((vec![], Timestamp::from_parts(1, 0)))
        );
        assert!(parse_value(&"00".repeat(2049), now).is_err());
        assert_eq!(parse_value(&"00".repeat(2048), now).unwrap().0.len(), 2048);
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("1.000001"), Some(Timestamp(1_000_001_000)));
        assert_eq!(parse_time("3"), Some(Timestamp(3_000_000_000)));
        assert_eq!(parse_time(".5"), Some(Timestamp(500_000_000)));
        assert_eq!(parse_time("-1"), None);
        assert_eq!(parse_time(""), None);
        assert_eq!(unparse(1_500_000_000), "1.500000");
        assert_eq!(unparse(0), "0.000000");
    }

    #[test]
    fn arguments_and_handlers() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("").is_err());
        assert!(m("nodot").is_err());
        assert!(m("a.b c").is_err());
        let mut e = m("s.run").unwrap();
        assert_eq!(e.read_handler("active").unwrap(), "false");
        e.write_handler("active", "true").unwrap();
        assert_eq!(e.read_handler("active").unwrap(), "true");
        assert_eq!(e.read_handler("time").unwrap(), "0.000000\n");
        assert!(e.write_handler("active", "perhaps").is_err());
    }
}
