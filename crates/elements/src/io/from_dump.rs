//! `FromDump`: reads packets from a pcap capture file.

use super::capture::CaptureSource;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};
use bricks_packet::{DEFAULT_BURST, MAX_BATCH};
use std::path::PathBuf;

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
        larger than a packet buffer (2048 bytes) are skipped and counted.",
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
    ],
    counters: &[
        ("count", "packets emitted"),
        (
            "oversized",
            "records skipped for being larger than a buffer",
        ),
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
    let src = CaptureSource::open(path, timing).map_err(ArgError::new)?;
    Ok(Box::new(FromDump {
        src,
        stop,
        burst: burst.clamp(1, MAX_BATCH),
        active,
    }))
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
