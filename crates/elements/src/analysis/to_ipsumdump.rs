//! `ToIPSummaryDump`: writes one text line per packet.

use super::info::{self, Field};
use super::ipsumdump_binary as binary;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::{DEFAULT_BURST, MAX_BATCH};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The `ToIPSummaryDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ToIPSummaryDump",
    ports: "1/0-1",
    processing: "a/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "writes a summary line (or binary record) per packet",
    synopsis: "ToIPSummaryDump(FILENAME, CONTENTS ... [, KEYWORDS])",
    description: "Writes Click's IP summary dump: a header (`!IPSummaryDump 1.3`, \
        `!creator` with BANNER, `!host` and `!runtime` when VERBOSE, and `!data` naming the \
        fields), then one line per packet with the CONTENTS fields separated by spaces, `-` \
        for a field the packet does not have. Every field of Click's ipsumdump_*.cc that \
        applies to IPv4 is written as Click writes it: timestamp, ts_sec, ts_usec, \
        ts_usec1, count, link, paint, direction, aggregate, wire_len, eth_src, eth_dst, \
        eth_type, ip_src, ip_dst, \
        ip_tos, ip_dscp, ip_ecn, ip_ttl, ip_frag, ip_fragoff, ip_id, ip_sum, ip_proto, \
        ip_hl, ip_len, ip_capture_len, ip_opt, sport, dport, tcp_seq, tcp_ack, tcp_off, \
        tcp_flags, tcp_window, tcp_urp, tcp_opt, tcp_ntopt, tcp_sack, udp_len, icmp_type, \
        icmp_code, icmp_type_name, icmp_code_name, icmp_flowid, icmp_seq, icmp_nextmtu, \
        payload_len, payload, payload_md5, payload_md5_hex (and Click's other names: src, \
        `ip src`, len, proto, ...). The IP header is at the network header annotation, or \
        at the packet's start. With BAD_PACKETS, a packet a field cannot be read from is \
        preceded by a `!bad REASON` line. FILENAME `-` is standard output. The file is \
        created when the first packet arrives or when the router stops. With BINARY true \
        the header ends with `!binary` and each packet is a binary record as Click writes \
        it, byte for byte: a 4-byte big-endian length (itself included), then each field \
        in a fixed size (1, 2, 4, 6, 8 or 16 bytes, numbers big-endian, addresses in \
        network order, zeros for a field the packet lacks; ip_opt, tcp_opt, tcp_ntopt \
        and tcp_sack as a length byte and the option bytes, ip_opt and tcp_opt twice as \
        Click writes them); `!bad` lines are text records, their length's top bit set. \
        payload cannot be written in binary (as in Click).",
    ports: "one input, push or pull; optional push output",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the dump to write (replaced if it exists); `-` for standard output",
        },
        Keyword {
            name: "CONTENTS",
            ty: "field names",
            default: None,
            doc: "fields of each line, in order; also given as the arguments after FILENAME",
        },
        Keyword {
            name: "FIELDS",
            ty: "field names",
            default: None,
            doc: "the same as CONTENTS (Click's other name; DATA is a third)",
        },
        Keyword {
            name: "HEADER",
            ty: "boolean",
            default: Some("true"),
            doc: "write the `!IPSummaryDump` and `!data` header lines",
        },
        Keyword {
            name: "BAD_PACKETS",
            ty: "boolean",
            default: Some("false"),
            doc: "write a `!bad REASON` line before a packet whose header is bad or cut short",
        },
        Keyword {
            name: "CAREFUL_TRUNC",
            ty: "boolean",
            default: Some("true"),
            doc: "with BAD_PACKETS, a capture shorter than the IP length is bad",
        },
        Keyword {
            name: "EXTRA_LENGTH",
            ty: "boolean",
            default: Some("true"),
            doc: "ip_len counts the extra length annotation (what a capture or Truncate cut off) \
                of packets without an IP header; payload_len always does",
        },
        Keyword {
            name: "VERBOSE",
            ty: "boolean",
            default: Some("false"),
            doc: "write `!host` and `!runtime` header lines",
        },
        Keyword {
            name: "BANNER",
            ty: "string",
            default: Some("none"),
            doc: "text of the `!creator` line",
        },
        Keyword {
            name: "MULTIPACKET",
            ty: "boolean",
            default: Some("false"),
            doc: "accepted for Click compatibility; each packet is one line (bricks has no \
                  extra packets annotation)",
        },
        Keyword {
            name: "BINARY",
            ty: "boolean",
            default: Some("false"),
            doc: "write Click's binary records instead of text lines (every field but payload)",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets pulled per task run when the input is pull",
        },
    ],
    counters: &[
        ("count", "packets written"),
        ("errors", "packets that could not be written"),
    ],
    example: "InfiniteSource(LIMIT 3, STOP true) -> ToIPSummaryDump(/tmp/bricks-example.ipsum, \
        CONTENTS ip src ip dst ip len);",
    see_also: &["FromIPSummaryDump", "IPPrint", "ToDump"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: PathBuf = args.read_mp("FILENAME")?;
    let mut contents: Vec<String> = args.read_all("CONTENTS")?;
    // Click's other names for CONTENTS.
    contents.extend(args.read_all::<String>("FIELDS")?);
    contents.extend(args.read_all::<String>("DATA")?);
    let verbose = args.read("VERBOSE")?.unwrap_or(false);
    let write_header: bool = args.read("HEADER")?.unwrap_or(true);
    let bad_packets: bool = args.read("BAD_PACKETS")?.unwrap_or(false);
    let careful_trunc: bool = args.read("CAREFUL_TRUNC")?.unwrap_or(true);
    let extra_length: bool = args.read("EXTRA_LENGTH")?.unwrap_or(true);
    let banner: Option<String> = args.read("BANNER")?;
    let _multipacket: bool = args.read("MULTIPACKET")?.unwrap_or(false);
    let binary = args.read("BINARY")?.unwrap_or(false);
    let burst: usize = args.read("BURST")?.unwrap_or(DEFAULT_BURST);
    for (text, _) in args.rest() {
        contents.push(text.to_string());
    }
    let fields = info::parse_fields(&contents.join(" "))
        .map_err(|e| ArgError::new(format!("bad CONTENTS: {e}")))?;
    if fields.is_empty() {
        return Err(ArgError::new("missing mandatory argument CONTENTS"));
    }
    if binary {
        for &f in &fields {
            binary::check_writable(f).map_err(ArgError::new)?;
        }
    }
    if let Some(f) = fields.iter().find(|f| !f.writable()) {
        return Err(ArgError::new(format!(
            "field `{}` cannot be written (bricks has no first timestamp annotation)",
            f.name()
        )));
    }
    Ok(Box::new(ToIPSummaryDump {
        header: if write_header {
            header_for(&fields, banner.as_deref(), verbose, binary)
        } else {
            String::new()
        },
        fields,
        path,
        out: None,
        failed: false,
        pull: ports.input_is_pull(0),
        pass: ports.noutputs() > 0,
        bad_packets,
        careful_trunc,
        extra_length,
        text: String::new(),
        binary,
        bytes: Vec::new(),
        burst: burst.clamp(1, MAX_BATCH),
        count: 0,
        errors: 0,
    }))
}

/// The header lines written before the first packet of a text dump.
pub fn header(fields: &[Field], banner: Option<&str>, verbose: bool) -> String {
    header_for(fields, banner, verbose, false)
}

/// The header lines written before the first packet; a binary dump's
/// ends with `!binary` and names `ntimestamp` as it is.
pub fn header_for(fields: &[Field], banner: Option<&str>, verbose: bool, binary: bool) -> String {
    let mut h = String::from(info::MAGIC);
    h.push('\n');
    if let Some(b) = banner {
        h.push_str("!creator ");
        h.push_str(&info::quote(b));
        h.push('\n');
    }
    if verbose {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let now = bricks_packet::Timestamp::now();
        h.push_str(&format!(
            "!host {}\n!runtime {}.{:06}\n",
            host.trim(),
            now.secs(),
            now.subsec_nanos() / 1000
        ));
    }
    h.push_str("!data");
    for f in fields {
        h.push(' ');
        // Click names ntimestamp `timestamp` in a text dump.
        h.push_str(match f {
            Field::NTimestamp if !binary => "timestamp",
            f => f.name(),
        });
    }
    h.push('\n');
    if binary {
        h.push_str("!binary\n");
    }
    h
}

type Shared = Arc<Mutex<Box<dyn Write + Send>>>;
type Table = Mutex<HashMap<PathBuf, Weak<Mutex<Box<dyn Write + Send>>>>>;

/// Open dumps by path, so that every worker's instance of one element
/// writes into one file, with one header.
fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// Writes summary lines.
pub struct ToIPSummaryDump {
    fields: Vec<Field>,
    header: String,
    path: PathBuf,
    out: Option<Shared>,
    failed: bool,
    pull: bool,
    pass: bool,
    bad_packets: bool,
    careful_trunc: bool,
    extra_length: bool,
    /// The lines of a batch, kept between batches (no allocation per
    /// packet once it has grown).
    text: String,
    /// BINARY: records, not lines.
    binary: bool,
    /// The records of a batch, kept as `text` is.
    bytes: Vec<u8>,
    burst: usize,
    count: u64,
    errors: u64,
}

impl ToIPSummaryDump {
    fn out(&mut self, cx: &mut Context<'_>) -> Option<Shared> {
        if let Some(o) = &self.out {
            return Some(o.clone());
        }
        if self.failed {
            return None;
        }
        let mut t = table().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(o) = t.get(&self.path).and_then(Weak::upgrade) {
            self.out = Some(o.clone());
            return Some(o);
        }
        let w: std::io::Result<Box<dyn Write + Send>> = if self.path.as_os_str() == "-" {
            Ok(Box::new(std::io::stdout()))
        } else {
            File::create(&self.path)
                .map(|f| Box::new(BufWriter::with_capacity(1 << 16, f)) as Box<dyn Write + Send>)
        };
        match w.and_then(|mut w| w.write_all(self.header.as_bytes()).map(|()| w)) {
            Ok(w) => {
                let o: Shared = Arc::new(Mutex::new(w));
                t.insert(self.path.clone(), Arc::downgrade(&o));
                self.out = Some(o.clone());
                Some(o)
            }
            Err(e) => {
                self.failed = true;
                cx.report_error(format!("{}: {e}", self.path.display()));
                None
            }
        }
    }

    fn write(&mut self, b: &Batch, cx: &mut Context<'_>) {
        if b.is_empty() {
            return;
        }
        let Some(o) = self.out(cx) else {
            self.errors += b.len() as u64;
            return;
        };
        if self.binary {
            self.bytes.clear();
            for p in b.iter() {
                if self.bad_packets {
                    // The reason, exactly as a text dump gives it.
                    self.text.clear();
                    let bad = info::write_line(
                        &self.fields,
                        p,
                        self.careful_trunc,
                        self.extra_length,
                        &mut self.text,
                    );
                    if let Some(why) = bad {
                        binary::write_text_record(&format!("!bad {why}\n"), &mut self.bytes);
                    }
                }
                binary::write_record(
                    &self.fields,
                    p,
                    self.careful_trunc,
                    self.extra_length,
                    &mut self.bytes,
                );
            }
        } else {
            self.text.clear();
            for p in b.iter() {
                let start = self.text.len();
                let bad = info::write_line(
                    &self.fields,
                    p,
                    self.careful_trunc,
                    self.extra_length,
                    &mut self.text,
                );
                self.text.push('\n');
                if let (Some(why), true) = (bad, self.bad_packets) {
                    let line = format!("!bad {why}\n");
                    self.text.insert_str(start, &line);
                }
            }
        }
        let out: &[u8] = if self.binary {
            &self.bytes
        } else {
            self.text.as_bytes()
        };
        let r = o.lock().unwrap_or_else(|e| e.into_inner()).write_all(out);
        match r {
            Ok(()) => self.count += b.len() as u64,
            Err(e) => {
                self.errors += b.len() as u64;
                if !self.failed {
                    self.failed = true;
                    cx.report_error(format!("{}: {e}", self.path.display()));
                }
            }
        }
    }

    fn take(&mut self, b: &mut Batch, cx: &mut Context<'_>) {
        self.write(b, cx);
        if self.pass {
            cx.push(0, b);
        } else {
            b.clear();
        }
    }
}

impl Element for ToIPSummaryDump {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.take(batch, cx);
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::pump_if(self.pull)
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        cx.pull_task(self.burst, |b, cx| self.take(b, cx))
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        if cx.worker() == 0 || self.count > 0 {
            if let Some(o) = self.out(cx) {
                let r = o.lock().unwrap_or_else(|e| e.into_inner()).flush();
                if let Err(e) = r {
                    cx.report_error(format!("{}: {e}", self.path.display()));
                }
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("errors", self.errors);
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 1] = [Handler::w("flush")];
        &HANDLERS
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            // Click's `flush`: what was written so far reaches the file.
            "flush" => match &self.out {
                Some(o) => o
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .flush()
                    .map_err(|e| format!("{}: {e}", self.path.display())),
                None => Ok(()),
            },
            _ => Err(format!(
                "no write handler `{handler}` (ToIPSummaryDump has `flush`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_the_fields() {
        let f = info::parse_fields("ip src ip dst tcp flags").unwrap();
        assert_eq!(
            header(&f, Some("test \"x\""), false),
            "!IPSummaryDump 1.3\n!creator \"test \\\"x\\\"\"\n!data ip_src ip_dst tcp_flags\n"
        );
        assert_eq!(
            header(&f, None, false),
            "!IPSummaryDump 1.3\n!data ip_src ip_dst tcp_flags\n"
        );
    }
}
