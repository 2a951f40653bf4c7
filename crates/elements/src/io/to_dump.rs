//! `ToDump`: writes packets to a pcap capture file.

use super::capture::CaptureSink;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};
use bricks_io::pcap::LinkType;
use bricks_packet::{DEFAULT_BURST, MAX_BATCH};
use std::path::PathBuf;

/// The `ToDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ToDump",
    ports: "1/0-1",
    processing: "a/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "writes packets to a pcap file",
    synopsis: "ToDump(FILENAME [, KEYWORDS])",
    description: "Writes each packet to a libpcap capture with its timestamp annotation \
        (the time it is written when the packet has none, as in Click). \
        The file is created when the first packet arrives or when the router stops, so \
        checking a configuration never touches it; it is flushed when the router stops. \
        With an output connected, packets continue there after being written. With a pull \
        input, a task pulls BURST packets at a time. Every worker writes into the same file.",
    ports: "one input, push or pull; optional push output",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the capture to write (replaced if it exists)",
        },
        Keyword {
            name: "SNAPLEN",
            ty: "unsigned",
            default: Some("0"),
            doc: "bytes kept per packet; 0 keeps them all",
        },
        Keyword {
            name: "ENCAP",
            ty: "ETHER or IP",
            default: Some("ETHER"),
            doc: "link type written in the file header",
        },
        Keyword {
            name: "NANO",
            ty: "boolean",
            default: Some("false"),
            doc: "write nanosecond timestamps",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets pulled per task run when the input is pull",
        },
        Keyword {
            name: "EXTRA_LENGTH",
            ty: "boolean",
            default: Some("true"),
            doc: "a record's length includes the packet's extra length annotation \
                (what a capture's snapshot length or Truncate cut off)",
        },
    ],
    counters: &[
        ("count", "packets written"),
        ("errors", "packets that could not be written"),
    ],
    example: "InfiniteSource(LIMIT 3, STOP true) -> ToDump(/tmp/bricks-example.pcap, ENCAP IP);",
    see_also: &["FromDump", "ToDevice"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: PathBuf = args.read_mp("FILENAME")?;
    let snaplen: u32 = args.read_p("SNAPLEN")?.unwrap_or(0);
    let encap: String = args.read_p("ENCAP")?.unwrap_or_else(|| "ETHER".into());
    let nanos = args.read("NANO")?.unwrap_or(false);
    let burst: usize = args.read("BURST")?.unwrap_or(DEFAULT_BURST);
    let extra_length = args.read("EXTRA_LENGTH")?.unwrap_or(true);
    let linktype = match encap.to_ascii_uppercase().as_str() {
        "ETHER" | "ETHERNET" => LinkType::Ethernet,
        "IP" | "RAW" => LinkType::RawIp,
        other => {
            return Err(ArgError::new(format!(
                "bad argument ENCAP: expected ETHER or IP, found `{other}`"
            )))
        }
    };
    Ok(Box::new(ToDump {
        sink: CaptureSink::new(path, linktype, nanos, snaplen).with_extra_length(extra_length),
        pull: ports.input_is_pull(0),
        pass: ports.noutputs() > 0,
        burst: burst.clamp(1, MAX_BATCH),
    }))
}

/// Writes a capture.
pub struct ToDump {
    sink: CaptureSink,
    pull: bool,
    pass: bool,
    burst: usize,
}

impl ToDump {
    fn take(&mut self, b: &mut Batch, cx: &mut Context<'_>) {
        self.sink.write(b, cx);
        if self.pass {
            cx.push(0, b);
        } else {
            b.clear();
        }
    }
}

impl Element for ToDump {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.take(batch, cx);
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::pump_if(self.pull)
    }

    /// Hot swap: the open file, when it is the same, and the counts.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        if let Some(old) = bricks_element::taken_from::<ToDump>(old) {
            self.sink.take_from(&mut old.sink);
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        cx.pull_task(self.burst, |b, cx| self.take(b, cx))
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        if cx.worker() == 0 || self.sink.count > 0 {
            self.sink.finish(cx);
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.sink.count);
        s.counter("errors", self.sink.errors);
    }
}
