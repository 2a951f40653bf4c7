//! `FromDump`: reads packets from a pcap capture file.

use super::capture::{CaptureSource, DumpTime, RecordFilter};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};
use bricks_packet::{DEFAULT_BURST, MAX_BATCH};
use std::path::PathBuf;
use std::time::Duration;

/// The `FromDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromDump",
    ports: "0/1",
    processing: "/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reads packets from a pcap file",
    synopsis: "FromDump(FILENAME [, KEYWORDS])",
    description: "Reads a libpcap capture (either byte order, microsecond or nanosecond \
        timestamps; link type Ethernet or raw IP) and pushes its packets in batches of \
        BURST, each timestamped with its capture time. For raw IP captures the IP header \
        annotation is set; for Ethernet captures the packet type (host, broadcast, \
        multicast) is set from the destination address. A file that is not a capture is \
        refused when the configuration is built; a capture damaged part way is reported \
        with the byte offset of the bad record, and the run ends with an error. Records \
        larger than a packet buffer (2048 bytes) are skipped and counted. START, END and \
        the other time keywords compare capture times; the end of the time range ends \
        the file (with STOP, the router stops). Under TIMING on a trace clock \
        (`--clock trace`, `click --simtime`) each packet leaves when the clock reaches \
        its time from the first packet on, with no wall-clock wait.",
    ports: "no inputs; one push output",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the capture to read",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router when the file is done (after in-flight packets are delivered)",
        },
        Keyword {
            name: "TIMING",
            ty: "boolean",
            default: Some("false"),
            doc: "replay at the pace the packets were captured",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets per batch (up to 256)",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "read at all (false: wait for `active` to be written)",
        },
        Keyword {
            name: "START",
            ty: "timestamp",
            default: None,
            doc: "skip the records captured before this time (seconds since the epoch)",
        },
        Keyword {
            name: "START_AFTER",
            ty: "duration",
            default: None,
            doc: "skip the records captured less than this after the first record",
        },
        Keyword {
            name: "END",
            ty: "timestamp",
            default: None,
            doc: "end the file at the first record captured at or after this time",
        },
        Keyword {
            name: "END_AFTER",
            ty: "duration",
            default: None,
            doc: "end the file this long after the first record's time",
        },
        Keyword {
            name: "INTERVAL",
            ty: "duration",
            default: None,
            doc: "end the file this long after the start (START, or the first record)",
        },
        Keyword {
            name: "SAMPLE",
            ty: "probability",
            default: Some("1"),
            doc: "emit each record with this probability (above 1 counts as 1)",
        },
        Keyword {
            name: "FORCE_IP",
            ty: "boolean",
            default: Some("false"),
            doc: "emit only IPv4 packets, with the IP header annotation set (after the \
                Ethernet header and at most one VLAN tag); others are skipped",
        },
    ],
    counters: &[
        ("count", "packets emitted"),
        (
            "oversized",
            "records skipped for being larger than a buffer",
        ),
        ("skipped", "records skipped for START, SAMPLE or FORCE_IP"),
    ],
    example: "FromDump(tests/golden/ip-router/eth0-in.pcap, STOP true) -> Discard;",
    see_also: &["ToDump", "FromDevice"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: PathBuf = args.read_mp("FILENAME")?;
    let stop = args.read("STOP")?.unwrap_or(false);
    let timing = args.read("TIMING")?.unwrap_or(false);
    let burst: usize = args.read("BURST")?.unwrap_or(DEFAULT_BURST);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let start: Option<String> = args.read("START")?;
    let start_after: Option<Duration> = args.read("START_AFTER")?;
    let end: Option<String> = args.read("END")?;
    let end_after: Option<Duration> = args.read("END_AFTER")?;
    let interval: Option<Duration> = args.read("INTERVAL")?;
    let sample: Option<f64> = args.read("SAMPLE")?;
    let force_ip: bool = args.read("FORCE_IP")?.unwrap_or(false);
    let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    if [end.is_some(), end_after.is_some(), interval.is_some()]
        .into_iter()
        .filter(|&b| b)
        .count()
        > 1
    {
        return Err(ArgError::new(
            "END, END_AFTER, and INTERVAL are mutually exclusive",
        ));
    }
    if start.is_some() && start_after.is_some() {
        return Err(ArgError::new(
            "START and START_AFTER are mutually exclusive",
        ));
    }
    let start = match (start, start_after) {
        (Some(t), _) => Some(DumpTime::At(parse_time("START", &t)?)),
        (None, d) => d.map(|d| DumpTime::After(ns(d))),
    };
    let end = match (end, end_after) {
        (Some(t), _) => Some(DumpTime::At(parse_time("END", &t)?)),
        (None, d) => d.map(|d| DumpTime::After(ns(d))),
    };
    let sample = match sample {
        None => None,
        Some(x) if x.is_nan() || x < 0.0 => {
            return Err(ArgError::new(format!("SAMPLE {x} is not a probability"))
                .with_help("give a number from 0 to 1"))
        }
        // Click reduces a probability above 1 to 1.
        Some(x) if x >= 1.0 => None,
        Some(x) => Some((x * 4_294_967_296.0) as u64),
    };
    let filter = RecordFilter::new(start, end, interval.map(ns), sample, force_ip);
    let mut src = CaptureSource::open(path, timing).map_err(ArgError::new)?;
    src.filter = filter;
    Ok(Box::new(FromDump {
        src,
        stop,
        burst: burst.clamp(1, MAX_BATCH),
        active,
    }))
}

/// Reads an absolute capture time, `SECONDS[.FRACTION]` since the epoch,
/// exactly (an f64 would lose the nanoseconds of a current time).
fn parse_time(key: &str, text: &str) -> Result<u64, ArgError> {
    let bad = || {
        ArgError::new(format!(
            "bad argument {key}: expected a timestamp, seconds since the epoch, found `{text}`"
        ))
    };
    let t = text.trim();
    let (sec, frac) = t.split_once('.').unwrap_or((t, ""));
    if sec.is_empty() && frac.is_empty()
        || !sec.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 9
    {
        return Err(bad());
    }
    let s: u64 = if sec.is_empty() {
        0
    } else {
        sec.parse().map_err(|_| bad())?
    };
    let f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().map_err(|_| bad())? * 10u64.pow(9 - frac.len() as u32)
    };
    s.checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(f))
        .ok_or_else(bad)
}

/// Reads a capture.
pub struct FromDump {
    src: CaptureSource,
    stop: bool,
    burst: usize,
    active: bool,
}

impl Element for FromDump {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        // One reader per capture: the other workers have nothing to read.
        if self.src.done {
            if self.stop {
                cx.request_stop();
            }
            return TaskResult::Done;
        }
        if !self.active {
            return TaskResult::Idle;
        }
        let mut b = Batch::new();
        let n = self.src.fill(&mut b, self.burst, cx);
        cx.push(0, &mut b);
        if n > 0 {
            TaskResult::Worked
        } else if self.src.done {
            self.run_task(cx)
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.src.count);
        s.counter("oversized", self.src.oversized);
        s.counter("skipped", self.src.filter.skipped);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (FromDump has `active`)"
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
    fn absolute_times_are_read_exactly() {
        assert_eq!(
            parse_time("START", "1700000000.000000001").unwrap(),
            1_700_000_000_000_000_001
        );
        assert_eq!(parse_time("START", "12.5").unwrap(), 12_500_000_000);
        assert_eq!(parse_time("START", "7").unwrap(), 7_000_000_000);
        assert_eq!(parse_time("START", ".25").unwrap(), 250_000_000);
        for bad in [
            "",
            ".",
            "1.2.3",
            "-1",
            "1e9",
            "1.0000000001",
            "99999999999999999999",
        ] {
            assert!(parse_time("START", bad).is_err(), "{bad}");
        }
    }
}
