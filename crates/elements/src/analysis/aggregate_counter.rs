//! `AggregateCounter`: counts packets or bytes per aggregate annotation
//! (Click's `elements/analysis/aggcounter.cc`) and writes the counts in
//! Click's `!IPAggregate 1.0` formats.
//!
//! Click keeps the counts in a binary trie, which it walks in order of
//! the aggregate; a `BTreeMap` gives the same order. The aggregate
//! annotation is the packet's `flow` annotation (what FromIPSummaryDump's
//! `aggregate` field and AggregateIPFlows set). Click's table grows until
//! memory runs out; this one holds at most CAPACITY aggregates, and a
//! packet of a new aggregate beyond that is treated as Click treats one
//! it has no memory for: not counted, and sent to output 1 if there is
//! one.

use super::super::standard::handler_call::HandlerCall;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_packet::MAX_BATCH;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `AggregateCounter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateCounter",
    ports: "1-2/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: aggregates held at most.
pub const DEFAULT_CAPACITY: usize = 1 << 20;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 26;

static MANUAL: Manual = Manual {
    summary: "counts packets per aggregate annotation",
    synopsis: "AggregateCounter([KEYWORDS])",
    description: "Counts the packets (or, with BYTES, the bytes) it sees for each value of \
        the aggregate annotation, and passes every packet on unchanged. A frozen \
        AggregateCounter (the `freeze` handler, AGGREGATE_FREEZE, COUNT_FREEZE) only adds to \
        aggregates it has counted already; packets of others are not counted. Input 1, if \
        there is one, is always frozen. With two outputs, packets that were counted leave by \
        output 0 and the others by output 1 (in push). The counts are written by the write \
        handlers `write_text_file`, `write_ascii_file` (text: `AGGREGATE COUNT` a line), \
        `write_ip_file` (the aggregate as an IPv4 address), `write_pdf_file` (each count over \
        the total, `%.12g`) and `write_file` (Click's packed binary records, `!packed_le` or \
        `!packed_be` for the host's byte order), each given a file name or `-` for standard \
        output; every format starts with `!IPAggregate 1.0`, the BANNER, and \
        `!num_nonzero N`, and lists aggregates in increasing order. Counts are kept in 64 \
        bits and written in 32 as Click does (the binary format saturates). The state is \
        shared by every worker. bricks holds at most CAPACITY aggregates (Click: until memory \
        runs out); a new aggregate beyond that is treated as Click treats one it has no \
        memory for (not counted, output 1) and counted in `overflows`. bricks has no \
        packet-count annotation: MULTIPACKET is accepted and each packet counts as one.",
    ports: "one or two inputs (input 1 always frozen), one or two outputs; push or pull",
    keywords: &[
        Keyword {
            name: "BYTES",
            ty: "boolean",
            default: Some("false"),
            doc: "count bytes, not packets",
        },
        Keyword {
            name: "IP_BYTES",
            ty: "boolean",
            default: Some("false"),
            doc: "with BYTES, leave out the bytes in front of the IP header",
        },
        Keyword {
            name: "MULTIPACKET",
            ty: "boolean",
            default: Some("true"),
            doc: "accepted for Click; bricks has no packet-count annotation",
        },
        Keyword {
            name: "EXTRA_LENGTH",
            ty: "boolean",
            default: Some("true"),
            doc: "with BYTES, add the extra length annotation (bytes a trace cut off)",
        },
        Keyword {
            name: "AGGREGATE_STOP",
            ty: "unsigned",
            default: Some("never"),
            doc: "stop the router once N aggregates have been seen (a packet of the N+1st)",
        },
        Keyword {
            name: "AGGREGATE_FREEZE",
            ty: "unsigned",
            default: Some("never"),
            doc: "freeze once N aggregates have been seen",
        },
        Keyword {
            name: "AGGREGATE_CALL",
            ty: "`N HANDLER [VALUE]`",
            default: Some("none"),
            doc: "call HANDLER once N aggregates have been seen (the three AGGREGATE_ keywords \
                  exclude each other)",
        },
        Keyword {
            name: "COUNT_STOP",
            ty: "unsigned",
            default: Some("never"),
            doc: "stop the router once the total count reaches N",
        },
        Keyword {
            name: "COUNT_FREEZE",
            ty: "unsigned",
            default: Some("never"),
            doc: "freeze once the total count reaches N",
        },
        Keyword {
            name: "COUNT_CALL",
            ty: "`N HANDLER [VALUE]`",
            default: Some("none"),
            doc: "call HANDLER once the total count reaches N (the three COUNT_ keywords \
                  exclude each other)",
        },
        Keyword {
            name: "BANNER",
            ty: "string",
            default: Some("empty"),
            doc: "written after `!IPAggregate 1.0` at the head of every file",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("1048576"),
            doc: "most aggregates held; from 1 to 67108864",
        },
    ],
    counters: &[
        ("nagg", "aggregates with a nonzero count"),
        ("count", "total count, packets or bytes"),
        (
            "overflows",
            "packets of a new aggregate refused because CAPACITY was reached",
        ),
    ],
    example: "InfiniteSource(LIMIT 3, STOP true) -> ac :: AggregateCounter -> Discard;\n\
              DriverManager(pause, write ac.write_text_file -, stop);",
    see_also: &["AggregateIPFlows", "FromIPSummaryDump"],
};

/// What happens when a threshold is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    Freeze,
    Stop,
    Call(HandlerCall),
}

impl Action {
    fn unparse(&self, own: &str) -> String {
        match self {
            Action::Freeze => format!("{own}.freeze true"),
            Action::Stop => format!("{own}.stop"),
            Action::Call(c) => c.unparse(),
        }
    }
}

/// A threshold (AGGREGATE_* or COUNT_*) and its action.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Trigger {
    at: u64,
    action: Action,
}

/// Parses `N HANDLER [VALUE]` (AGGREGATE_CALL, COUNT_CALL).
fn parse_call(text: &str, what: &str) -> Result<Trigger, String> {
    let text = text.trim();
    let (n, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let at = n
        .parse::<u64>()
        .map_err(|_| format!("{what} first word should be unsigned"))?;
    Ok(Trigger {
        at,
        action: Action::Call(HandlerCall::parse(rest)?),
    })
}

/// The output formats of the write handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Ip,
    Pdf,
    Binary,
}

/// Counts and settings every worker shares.
#[derive(Debug)]
struct Table {
    counts: BTreeMap<u32, u64>,
    nonzero: u64,
    total: u64,
    overflows: u64,
    frozen: bool,
    active: bool,
    banner: String,
    agg_trigger: Option<Trigger>,
    count_trigger: Option<Trigger>,
    /// The element's name, for its own calls in `aggregate_call`.
    own: String,
}

/// Shared state: the table behind one lock.
#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
    capacity: usize,
    bytes: bool,
    ip_bytes: bool,
    extra_length: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Reads an unsigned keyword given as a count.
fn read_u64(args: &mut Args<'_>, key: &'static str) -> Result<Option<u64>, ArgError> {
    args.read::<u64>(key)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let bytes = args.read::<bool>("BYTES")?.unwrap_or(false);
    let ip_bytes = args.read::<bool>("IP_BYTES")?.unwrap_or(false);
    let _multipacket = args.read::<bool>("MULTIPACKET")?.unwrap_or(true);
    let extra_length = args.read::<bool>("EXTRA_LENGTH")?.unwrap_or(true);
    let agg_freeze = read_u64(args, "AGGREGATE_FREEZE")?;
    let count_freeze = read_u64(args, "COUNT_FREEZE")?;
    let agg_stop = read_u64(args, "AGGREGATE_STOP")?;
    let count_stop = read_u64(args, "COUNT_STOP")?;
    let agg_call = args.read::<String>("AGGREGATE_CALL")?;
    let count_call = args.read::<String>("COUNT_CALL")?;
    let mut banner = args.read::<String>("BANNER")?.unwrap_or_default();
    if !banner.is_empty() && !banner.ends_with('\n') {
        banner.push('\n');
    }
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    let trigger = |freeze: Option<u64>,
                   stop: Option<u64>,
                   call: Option<String>,
                   kind: &str|
     -> Result<Option<Trigger>, ArgError> {
        let given = usize::from(freeze.is_some())
            + usize::from(stop.is_some())
            + usize::from(call.is_some());
        if given > 1 {
            return Err(ArgError::new(format!(
                "'{kind}_FREEZE', '{kind}_STOP', and '{kind}_CALL' are mutually exclusive"
            )));
        }
        Ok(match (freeze, stop, call) {
            (Some(at), _, _) => Some(Trigger {
                at,
                action: Action::Freeze,
            }),
            (_, Some(at), _) => Some(Trigger {
                at,
                action: Action::Stop,
            }),
            (_, _, Some(c)) => {
                Some(parse_call(&c, &format!("{kind}_CALL")).map_err(ArgError::new)?)
            }
            _ => None,
        })
    };
    let agg_trigger = trigger(agg_freeze, agg_stop, agg_call, "AGGREGATE")?;
    let count_trigger = trigger(count_freeze, count_stop, count_call, "COUNT")?;
    let sh = args.shared(|_| {
        Ok(Shared {
            table: Mutex::new(Table {
                counts: BTreeMap::new(),
                nonzero: 0,
                total: 0,
                overflows: 0,
                frozen: false,
                active: true,
                banner,
                agg_trigger,
                count_trigger,
                own: String::new(),
            }),
            capacity,
            bytes,
            ip_bytes,
            extra_length,
        })
    })?;
    Ok(Box::new(AggregateCounter {
        sh,
        noutputs: ports.noutputs(),
        ninputs: ports.ninputs(),
        pending: Vec::new(),
    }))
}

/// One worker's AggregateCounter.
#[derive(Debug)]
pub struct AggregateCounter {
    sh: Arc<Shared>,
    noutputs: usize,
    ninputs: usize,
    /// Calls to busy elements, made by the next timer.
    pending: Vec<HandlerCall>,
}

impl AggregateCounter {
    /// What `p` adds to its aggregate's count.
    fn amount(&self, p: &Packet) -> u64 {
        if !self.sh.bytes {
            return 1;
        }
        let mut n = p.len() as u64;
        if self.sh.extra_length {
            n += u64::from(p.anno().extra_length);
        }
        if self.sh.ip_bytes && p.anno().l3_offset().is_some() {
            n = n.saturating_sub(p.network_header_offset().unwrap_or(0) as u64);
        }
        n
    }

    /// Counts `p` (Click's `update`): whether it was counted. Actions of
    /// thresholds reached are appended to `fired`.
    fn update(&self, t: &mut Table, p: &Packet, frozen: bool, fired: &mut Vec<Action>) -> bool {
        if !t.active {
            return false;
        }
        let agg = p.anno().flow;
        let amount = self.amount(p);
        let mut frozen = frozen || t.frozen;
        let cur = match t.counts.get(&agg) {
            Some(&c) => c,
            None if frozen => return false,
            None if t.counts.len() >= self.sh.capacity => {
                t.overflows += 1;
                return false;
            }
            None => 0,
        };
        if frozen && cur == 0 {
            // Click's frozen lookup finds only aggregates with a count.
            return false;
        }
        if amount > 0 && cur == 0 {
            if let Some(tr) = t.agg_trigger.take_if(|tr| t.nonzero >= tr.at) {
                // Click calls before counting, then looks again: the call
                // may have frozen or stopped the counter.
                self.act_now(t, &tr.action);
                fired.push(tr.action);
                if !t.active {
                    return false;
                }
                frozen = frozen || t.frozen;
                if frozen {
                    return false;
                }
            }
            t.nonzero += 1;
        }
        *t.counts.entry(agg).or_insert(0) += amount;
        t.total = t.total.saturating_add(amount);
        if let Some(tr) = t.count_trigger.take_if(|tr| t.total >= tr.at) {
            self.act_now(t, &tr.action);
            fired.push(tr.action);
        }
        true
    }

    /// The part of an action on the table itself, done under its lock.
    fn act_now(&self, t: &mut Table, a: &Action) {
        match a {
            Action::Freeze => t.frozen = true,
            Action::Stop => t.active = false,
            Action::Call(_) => {}
        }
    }

    /// The part of actions that reaches outside: stopping the router, or
    /// another element's handler (one of this element's own is applied
    /// here, as the element is busy).
    fn fire(&mut self, fired: Vec<Action>, cx: &mut Context<'_>) {
        for a in fired {
            match a {
                Action::Freeze => {}
                Action::Stop => cx.request_stop(),
                Action::Call(c) => {
                    let own = cx.name().to_string();
                    if let Some((h, v)) = c.own_call(&own) {
                        let (h, v) = (h.to_string(), v.to_string());
                        if h == "stop" {
                            self.sh.lock().active = false;
                            cx.request_stop();
                        } else if let Err(e) = self.write_handler(&h, &v) {
                            eprintln!("{own}: {}: {e}", c.unparse());
                        }
                    } else {
                        c.call(cx, &mut self.pending);
                    }
                }
            }
        }
    }

    /// The file text (or bytes) of one format.
    fn render(&self, format: Format) -> Vec<u8> {
        let t = self.sh.lock();
        let mut out = Vec::with_capacity(64 + t.counts.len() * 12);
        out.extend_from_slice(b"!IPAggregate 1.0\n");
        out.extend_from_slice(t.banner.as_bytes());
        out.extend_from_slice(format!("!num_nonzero {}\n", t.nonzero).as_bytes());
        match format {
            Format::Binary if cfg!(target_endian = "little") => {
                out.extend_from_slice(b"!packed_le\n")
            }
            Format::Binary => out.extend_from_slice(b"!packed_be\n"),
            Format::Ip => out.extend_from_slice(b"!ip\n"),
            _ => {}
        }
        // Click prints its 32-bit counts.
        let total = t.total as u32;
        for (&agg, &count) in t.counts.iter().filter(|(_, &c)| c > 0) {
            let c32 = count as u32;
            match format {
                Format::Text => out.extend_from_slice(format!("{agg} {c32}\n").as_bytes()),
                Format::Ip => out.extend_from_slice(
                    format!("{} {c32}\n", std::net::Ipv4Addr::from(agg)).as_bytes(),
                ),
                Format::Pdf => out.extend_from_slice(
                    format!("{agg} {}\n", g12(f64::from(c32) / f64::from(total))).as_bytes(),
                ),
                Format::Binary => {
                    out.extend_from_slice(&agg.to_ne_bytes());
                    out.extend_from_slice(&(count.min(u64::from(u32::MAX)) as u32).to_ne_bytes());
                }
            }
        }
        out
    }

    fn write_file(&self, value: &str, format: Format) -> Result<(), String> {
        let name = value.trim();
        if name.is_empty() {
            return Err("argument should be filename".into());
        }
        let data = self.render(format);
        if name == "-" {
            let mut o = std::io::stdout().lock();
            o.write_all(&data)
                .and_then(|_| o.flush())
                .map_err(|e| format!("-: {e}"))
        } else {
            std::fs::write(name, &data).map_err(|e| format!("{name}: {e}"))
        }
    }

    /// Click's `counts_pdf`: the counts become the aggregates, and each
    /// count how many aggregates had it.
    fn reaggregate(&self) {
        let mut t = self.sh.lock();
        let old = std::mem::take(&mut t.counts);
        // Click reaggregates every node of its trie, zero counts included.
        // The trie starts as one node (aggregate 0) and each other
        // aggregate adds two, so 1 + 2m nodes hold the m nonzero
        // aggregates, and those without a count add to aggregate 0.
        let m = old.keys().filter(|&&k| k != 0).count() as u64;
        let mut nnz = 0u64;
        let mut new: BTreeMap<u32, u64> = BTreeMap::new();
        for &c in old.values().filter(|&&c| c > 0) {
            nnz += 1;
            *new.entry(c as u32).or_insert(0) += 1;
        }
        *new.entry(0).or_insert(0) += 1 + 2 * m - nnz;
        t.nonzero = new.values().filter(|&&c| c > 0).count() as u64;
        t.total = new.values().sum();
        t.counts = new;
    }
}

/// `%.12g`, as Click's `write_pdf_file` prints a fraction.
pub(crate) fn g12(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else {
            format!("{x}")
        };
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-5..12).contains(&exp) {
        let s = format!("{x:.11e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (11 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

const HANDLERS: &[Handler] = &[
    Handler::w("write_text_file"),
    Handler::w("write_ascii_file"),
    Handler::w("write_file"),
    Handler::w("write_ip_file"),
    Handler::w("write_pdf_file"),
    Handler::rw("freeze"),
    Handler::rw("active"),
    Handler::w("stop"),
    Handler::w("reaggregate_counts"),
    Handler::w("counts_pdf"),
    Handler::rw("banner"),
    Handler::w("clear"),
    Handler::rw("aggregate_call"),
    Handler::rw("count_call"),
    Handler::r("count"),
    Handler::r("nagg"),
];

impl Element for AggregateCounter {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut fired = Vec::new();
        // Counted under the lock, pushed after it: other workers wait
        // for the counting only.
        let mut counted = [false; MAX_BATCH];
        {
            let sh = Arc::clone(&self.sh);
            let mut t = sh.lock();
            for (c, p) in counted.iter_mut().zip(batch.iter()) {
                *c = self.update(&mut t, p, port == 1, &mut fired);
            }
        }
        if self.noutputs < 2 {
            cx.push(0, batch);
        } else {
            let mut verdicts = counted.into_iter();
            cx.push_classified(batch, |_| {
                Some(usize::from(!verdicts.next().unwrap_or(true)))
            });
        }
        self.fire(fired, cx);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        // With two inputs, a pull on output 1 pulls input 1, as Click's.
        let input = if port == 1 && self.ninputs > 1 { 1 } else { 0 };
        cx.pull(input, &mut b, max);
        let mut fired = Vec::new();
        {
            let sh = Arc::clone(&self.sh);
            let mut t = sh.lock();
            for p in b.iter() {
                self.update(&mut t, p, port == 1, &mut fired);
            }
        }
        out.append(&mut b);
        self.fire(fired, cx);
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        let mut t = self.sh.lock();
        if t.own.is_empty() {
            t.own = cx.name().to_string();
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        HandlerCall::run_pending(cx, &mut self.pending);
    }

    fn stats(&self, s: &mut Stats) {
        let t = self.sh.lock();
        s.counter("nagg", t.nonzero);
        s.counter("count", t.total);
        s.counter("overflows", t.overflows);
    }

    fn handler_is_shared(&self, _handler: &str) -> bool {
        // Every handler acts on the shared table (and files are written
        // once).
        true
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let t = self.sh.lock();
        Some(match handler {
            "freeze" => t.frozen.to_string(),
            "active" => t.active.to_string(),
            "banner" => t.banner.clone(),
            "count" => t.total.to_string(),
            "nagg" => t.nonzero.to_string(),
            "aggregate_call" => t
                .agg_trigger
                .as_ref()
                .map(|tr| format!("{} {}", tr.at, tr.action.unparse(&t.own)))
                .unwrap_or_default(),
            "count_call" => t
                .count_trigger
                .as_ref()
                .map(|tr| format!("{} {}", tr.at, tr.action.unparse(&t.own)))
                .unwrap_or_default(),
            _ => return None,
        })
    }

    fn call_handler(
        &mut self,
        handler: &str,
        _value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler == "stop" && write {
            self.sh.lock().active = false;
            cx.request_stop();
            return Some(Ok(String::new()));
        }
        None
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let s = value.trim();
        match handler {
            "write_text_file" | "write_ascii_file" => self.write_file(s, Format::Text),
            "write_file" => self.write_file(s, Format::Binary),
            "write_ip_file" => self.write_file(s, Format::Ip),
            "write_pdf_file" => self.write_file(s, Format::Pdf),
            "freeze" => {
                self.sh.lock().frozen = bool::from_arg(s).map_err(|_| "type mismatch")?;
                Ok(())
            }
            "active" => {
                self.sh.lock().active = bool::from_arg(s).map_err(|_| "type mismatch")?;
                Ok(())
            }
            "stop" => {
                self.sh.lock().active = false;
                Ok(())
            }
            "reaggregate_counts" | "counts_pdf" => {
                self.reaggregate();
                Ok(())
            }
            "banner" => {
                // Click's raw handler: the value as written, a newline
                // added; a lone newline clears it.
                let mut b = value.to_string();
                if b == "\n" {
                    b.clear();
                } else if !b.is_empty() && !b.ends_with('\n') {
                    b.push('\n');
                }
                self.sh.lock().banner = b;
                Ok(())
            }
            "clear" => {
                let mut t = self.sh.lock();
                t.counts.clear();
                t.nonzero = 0;
                t.total = 0;
                Ok(())
            }
            "aggregate_call" | "count_call" => {
                let tr = if s.is_empty() {
                    None
                } else {
                    Some(parse_call(s, handler).map_err(|_| {
                        format!("argument to '{handler}' should be 'N HANDLER [VALUE]'")
                    })?)
                };
                let mut t = self.sh.lock();
                if handler == "aggregate_call" {
                    t.agg_trigger = tr;
                } else {
                    t.count_trigger = tr;
                }
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    /// A UDP packet 18.26.4.44:30 -> 10.0.0.4:40 with 4 bytes of data.
    const UDP: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 0x12, 0x1a, 0x04,
        0x2c, 0x0a, 0x00, 0x00, 0x04, 0x00, 0x1e, 0x00, 0x28, 0x00, 0x0c, 0x00, 0x00, 0xde, 0xad,
        0xbe, 0xef,
    ];

    fn packet(agg: u32) -> Packet {
        let mut p = Packet::from_slice(&UDP).unwrap();
        p.anno_mut().flow = agg;
        p
    }

    fn feed(h: &mut Harness, port: usize, aggs: &[u32]) {
        h.push_packets(port, aggs.iter().map(|&a| packet(a)));
    }

    /// What write handler `handler` writes, through a file.
    fn written(h: &Harness, handler: &str) -> Vec<u8> {
        let path = std::env::temp_dir().join(format!(
            "bricks-aggcounter-{}-{handler}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        h.write_handler(handler, path.to_str().unwrap()).unwrap();
        let data = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        data
    }

    fn text(h: &Harness) -> String {
        String::from_utf8(written(h, "write_text_file")).unwrap()
    }

    #[test]
    fn counts_per_aggregate_in_order() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        feed(&mut h, 0, &[1, 1, 0, 0, 0, 2, 3, 2]);
        assert_eq!(h.take(0).len(), 8);
        assert_eq!(
            text(&h),
            "!IPAggregate 1.0\n!num_nonzero 4\n0 3\n1 2\n2 2\n3 1\n"
        );
        assert_eq!(h.read_handler("nagg").unwrap(), "4");
        assert_eq!(h.read_handler("count").unwrap(), "8");
        h.write_handler("clear", "").unwrap();
        assert_eq!(h.read_handler("nagg").unwrap(), "0");
    }

    #[test]
    fn bytes_and_ip_formats() {
        let mut h = Harness::push(&CLASS, "BYTES true, BANNER \"# trace\"", 1, 1);
        feed(&mut h, 0, &[0x0a00_0004, 0x0a00_0004, 7]);
        let ip = String::from_utf8(written(&h, "write_ip_file")).unwrap();
        assert_eq!(
            ip,
            "!IPAggregate 1.0\n# trace\n!num_nonzero 2\n!ip\n0.0.0.7 32\n10.0.0.4 64\n"
        );
        let pdf = String::from_utf8(written(&h, "write_pdf_file")).unwrap();
        assert!(
            pdf.ends_with("7 0.333333333333\n167772164 0.666666666667\n"),
            "{pdf}"
        );
        let bin = written(&h, "write_file");
        let body = &bin[bin.len() - 16..];
        assert_eq!(&body[..4], &7u32.to_ne_bytes());
        assert_eq!(&body[4..8], &32u32.to_ne_bytes());
    }

    #[test]
    fn frozen_counts_only_known_aggregates_and_splits_outputs() {
        let mut h = Harness::push(&CLASS, "AGGREGATE_FREEZE 2", 2, 2);
        feed(&mut h, 0, &[5, 6, 7, 5]);
        feed(&mut h, 1, &[9, 6]);
        assert_eq!(h.read_handler("freeze").unwrap(), "true");
        assert_eq!(h.take(0).len(), 4, "5, 6, 5 counted and 6 on input 1");
        assert_eq!(h.take(1).len(), 2, "7 after the freeze, 9 on input 1");
        assert_eq!(h.read_handler("count").unwrap(), "4");
    }

    #[test]
    fn capacity_bounds_the_table() {
        let mut h = Harness::push(&CLASS, "CAPACITY 2", 1, 2);
        feed(&mut h, 0, &[1, 2, 3, 1, 4]);
        assert_eq!(h.take(1).len(), 2);
        assert_eq!(h.stats().get("overflows"), Some(2));
        assert_eq!(h.read_handler("nagg").unwrap(), "2");
    }

    #[test]
    fn aggregate_stop_stops_the_router() {
        let mut h = Harness::push(&CLASS, "AGGREGATE_STOP 1", 1, 1);
        feed(&mut h, 0, &[1, 1]);
        assert!(!h.stop_requested());
        feed(&mut h, 0, &[2]);
        assert!(h.stop_requested());
        assert_eq!(h.read_handler("active").unwrap(), "false");
        assert_eq!(h.read_handler("count").unwrap(), "2");
    }

    #[test]
    fn counts_pdf_turns_counts_into_aggregates() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        feed(&mut h, 0, &[1, 1, 2, 2, 3]);
        h.write_handler("counts_pdf", "").unwrap();
        // Counts 2, 2, 1, and Click's four trie nodes without a count.
        assert!(text(&h).ends_with("0 4\n1 1\n2 2\n"), "{}", text(&h));
    }

    #[test]
    fn handlers_and_arguments() {
        let h = Harness::push(&CLASS, "COUNT_CALL 5 x.y 1", 1, 1);
        assert_eq!(h.read_handler("count_call").unwrap(), "5 x.y 1");
        h.write_handler("banner", "hello").unwrap();
        assert_eq!(h.read_handler("banner").unwrap(), "hello\n");
        assert!(h.write_handler("freeze", "maybe").is_err());
        assert!(h.write_handler("aggregate_call", "x y").is_err());
        let ports = || PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        let bad = |a: &str| Harness::try_new(&CLASS, a, ports()).is_err();
        assert!(bad("AGGREGATE_STOP 1, AGGREGATE_FREEZE 2"));
        assert!(bad("COUNT_CALL x"));
        assert!(bad("CAPACITY 0"));
        assert!(!bad("COUNT_STOP 1, AGGREGATE_FREEZE 2"));
    }

    #[test]
    fn g12_is_printf() {
        assert_eq!(g12(0.5), "0.5");
        assert_eq!(g12(1.0 / 3.0), "0.333333333333");
        assert_eq!(g12(1.0), "1");
        assert_eq!(g12(1e-7), "1e-07");
    }
}
