//! `FromDump`: reads packets from a pcap capture file.

use super::capture::{CaptureSource, DumpTime, RecordFilter};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
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
        its time from the first packet on, with no wall-clock wait.\n\n\
        Handlers `filesize` (the file's length in bytes, `-` when it is not a regular file) \
        and `filepos` (how far into the file reading has come, in bytes) are Click's, for \
        a ProgressBar. Unlike Click's, `filepos` counts the file header and the records \
        emitted so far: records skipped (START, SAMPLE, FORCE_IP, oversized) are counted \
        only once the whole file is read, when it is the file's length; it cannot be \
        written (Click seeks there).",
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
    example: "fd :: FromDump(tests/golden/ip-router/eth0-in.pcap, STOP true) -> Discard;\n\
        ProgressBar(fd.filepos, fd.filesize);",
    see_also: &["ToDump", "FromDevice"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: PathBuf = args.read_mp("FILENAME")?;
    let stop = args.read("STOP")?.unwrap_or(false);
    let timing = args.read("TIMING")?.unwrap_or(false);
    let burst: usize = args.read("BURST")?.unwrap_or(DEFAULT_BURST);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let (start, end, interval) = read_time_keywords(args)?;
    let sample: Option<f64> = args.read("SAMPLE")?;
    let force_ip: bool = args.read("FORCE_IP")?.unwrap_or(false);
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
    let filter = RecordFilter::new(start, end, interval, sample, force_ip);
    let mut src = CaptureSource::open(path.clone(), timing).map_err(ArgError::new)?;
    src.filter = filter;
    Ok(Box::new(FromDump {
        src,
        path,
        read_bytes: PCAP_HEADER,
        stop,
        burst: burst.clamp(1, MAX_BATCH),
        active,
    }))
}

/// The start, the end, and INTERVAL (ns) a trace reader was given.
pub(crate) type TimeKeywords = (Option<DumpTime>, Option<DumpTime>, Option<u64>);

/// START, START_AFTER, END, END_AFTER and INTERVAL, as FromDump and
/// Click's other trace readers (FromNLANRDump, FromDAGDump) take them:
/// the start, the end, and INTERVAL in nanoseconds.
pub(crate) fn read_time_keywords(args: &mut Args<'_>) -> Result<TimeKeywords, ArgError> {
    let start: Option<String> = args.read("START")?;
    let start_after: Option<Duration> = args.read("START_AFTER")?;
    let end: Option<String> = args.read("END")?;
    let end_after: Option<Duration> = args.read("END_AFTER")?;
    let interval: Option<Duration> = args.read("INTERVAL")?;
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
    Ok((start, end, interval.map(ns)))
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

/// The length of a pcap file header, where the first record starts.
const PCAP_HEADER: u64 = 24;

/// The length of a pcap record header, before each record's bytes.
const RECORD_HEADER: u64 = 16;

/// Reads a capture.
pub struct FromDump {
    src: CaptureSource,
    /// The capture's file, for `filesize`.
    path: PathBuf,
    /// The file header and the records emitted so far, in bytes: what
    /// `filepos` says until the file is read through.
    read_bytes: u64,
    stop: bool,
    burst: usize,
    active: bool,
}

impl FromDump {
    /// The file's length, `None` when it is not a regular file (Click's
    /// `filesize` then says `-`).
    fn file_size(&self) -> Option<u64> {
        std::fs::metadata(&self.path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len())
    }

    /// Where reading has come in the file: once it is read to its end
    /// (no END, END_AFTER or INTERVAL cut it short), its length.
    fn file_pos(&self) -> u64 {
        let f = &self.src.filter;
        let to_the_end = self.src.done && f.end.is_none() && f.interval.is_none();
        match self.file_size() {
            Some(n) if to_the_end => n,
            _ => self.read_bytes,
        }
    }
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
        self.read_bytes += b
            .as_slice()
            .iter()
            .map(|p| RECORD_HEADER + p.len() as u64)
            .sum::<u64>();
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

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "filesize" => Some(match self.file_size() {
                Some(n) => n.to_string(),
                None => "-".into(),
            }),
            "filepos" => Some(self.file_pos().to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("filesize"),
            Handler::r("filepos"),
            Handler::w("active"),
        ];
        H
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
    use bricks_io::pcap::{LinkType, PcapWriter};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    /// Writes a capture of `n` Ethernet frames of `len` bytes.
    fn capture(path: &std::path::Path, n: usize, len: usize) {
        let f = std::fs::File::create(path).unwrap();
        let mut w = PcapWriter::new(f, LinkType::Ethernet, false, 0).unwrap();
        for i in 0..n {
            w.write(Timestamp::from_parts(1 + i as u64, 0), &vec![0x42; len])
                .unwrap();
        }
        w.flush().unwrap();
    }

    #[test]
    fn filepos_and_filesize_follow_the_reading() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.pcap");
        capture(&path, 5, 60);
        let size = 24 + 5 * (16 + 60);
        let mut h = Harness::push(&CLASS, &format!("{}, BURST 2", path.display()), 0, 1);
        assert_eq!(h.read_handler("filesize").unwrap(), size.to_string());
        assert_eq!(h.read_handler("filepos").unwrap(), "24");
        h.run_task();
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(
            h.read_handler("filepos").unwrap(),
            (24 + 2 * 76).to_string()
        );
        while h.run_task() != TaskResult::Done {}
        assert_eq!(h.read_handler("filepos").unwrap(), size.to_string());
        assert!(h.read_handler("handlers").unwrap().contains("filepos\tr\n"));
        // Records SAMPLE skips are counted once the file is read.
        let mut h = Harness::push(&CLASS, &format!("{}, SAMPLE 0", path.display()), 0, 1);
        h.run_task();
        assert_eq!(h.read_handler("filepos").unwrap(), size.to_string());
        // A file that is not a regular file has no size.
        let h = Harness::push(&CLASS, &path.display().to_string(), 0, 1);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(h.read_handler("filesize").unwrap(), "-");
    }

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
