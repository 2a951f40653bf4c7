//! `TimeFilter`: passes packets whose timestamps lie in a range, as
//! Click's `elements/analysis/timefilter.cc`.

use super::adjust_timestamp::{parse_signed_time, unparse_time};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::MAX_BATCH;
use std::collections::VecDeque;

/// The `TimeFilter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TimeFilter",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "filters packets by timestamp",
    synopsis: "TimeFilter([START, END], START_AFTER, START_DELAY, END_AFTER, END_DELAY, \
        INTERVAL, STOP, END_CALL)",
    description: "Passes packets whose timestamp annotation lies in [start, end) to output \
        0; the others go to output 1, or are dropped and counted. The range is absolute \
        (START, END, in seconds since 1970), relative to the first packet's timestamp \
        (START_AFTER, END_AFTER), relative to the time the router starts (START_DELAY, \
        END_DELAY), or INTERVAL long after the start. With STOP true the router stops at \
        the first packet past the end; END_CALL `ELEMENT.HANDLER VALUE` writes that handler \
        instead, `$t` in VALUE replaced by the packet's timestamp.\n\n\
        Handlers: `start` and `end` read and set the range (`start` also fixes a relative \
        start), `interval` reads end minus start and sets the end that far after the \
        start, `extend_interval` moves the end later. An END_CALL handler may write back \
        to this TimeFilter (Click's `extend_interval` from a Script): the packets behind the \
        one that made the call wait (at most 1024; more are dropped and counted) until that \
        write has landed, and that packet is judged again, as Click does.",
    ports: "one input, one or two outputs; agnostic (output 1 push)",
    keywords: &[
        Keyword {
            name: "START",
            ty: "time",
            default: Some("0"),
            doc: "absolute start; positional",
        },
        Keyword {
            name: "END",
            ty: "time",
            default: Some("never"),
            doc: "absolute end; positional",
        },
        Keyword {
            name: "START_AFTER",
            ty: "time",
            default: None,
            doc: "start this long after the first packet's timestamp",
        },
        Keyword {
            name: "START_DELAY",
            ty: "time",
            default: None,
            doc: "start this long after the router starts",
        },
        Keyword {
            name: "END_AFTER",
            ty: "time",
            default: None,
            doc: "end this long after the first packet's timestamp",
        },
        Keyword {
            name: "END_DELAY",
            ty: "time",
            default: None,
            doc: "end this long after the router starts",
        },
        Keyword {
            name: "INTERVAL",
            ty: "time",
            default: None,
            doc: "end this long after the start",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router at the first packet past the end",
        },
        Keyword {
            name: "END_CALL",
            ty: "ELEMENT.HANDLER [VALUE]",
            default: None,
            doc: "write handler called at the first packet past the end",
        },
    ],
    counters: &[(
        "drops",
        "packets outside the range with output 1 unconnected",
    )],
    example: "InfiniteSource(LIMIT 5) -> SetTimestamp(1) -> TimeFilter(END 2) \
        -> c :: Counter -> Discard;",
    see_also: &["SetTimestamp", "AdjustTimestamp"],
};

/// What happens at the first packet past the end.
#[derive(Debug, Clone, PartialEq, Eq)]
enum EndAction {
    None,
    Stop,
    Call {
        element: String,
        handler: String,
        value: String,
    },
}

fn parse_call(text: &str) -> Result<EndAction, String> {
    let text = text.trim();
    let (target, value) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let (element, handler) = target
        .rsplit_once('.')
        .ok_or_else(|| format!("END_CALL: expected ELEMENT.HANDLER, found `{target}`"))?;
    if element.is_empty() || handler.is_empty() {
        return Err(format!(
            "END_CALL: expected ELEMENT.HANDLER, found `{target}`"
        ));
    }
    Ok(EndAction::Call {
        element: element.into(),
        handler: handler.into(),
        value: value.trim().into(),
    })
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let time =
        |args: &mut Args<'_>, key: &'static str, pos: bool| -> Result<Option<i64>, ArgError> {
            let t: Option<String> = if pos {
                args.read_p(key)?
            } else {
                args.read(key)?
            };
            t.map(|t| {
                parse_signed_time(&t).map_err(|e| ArgError::new(format!("bad argument {key}: {e}")))
            })
            .transpose()
        };
    let start = time(args, "START", true)?;
    let end = time(args, "END", true)?;
    let start_delay = time(args, "START_DELAY", false)?;
    let end_delay = time(args, "END_DELAY", false)?;
    let start_after = time(args, "START_AFTER", false)?;
    let end_after = time(args, "END_AFTER", false)?;
    let interval = time(args, "INTERVAL", false)?;
    let stop = args.read("STOP")?.unwrap_or(false);
    let call: Option<String> = args.read("END_CALL")?;
    let bad = |s: &str| Err(ArgError::new(s.to_string()));
    let mut f = TimeFilter {
        first: 0,
        last: i64::MAX,
        first_relative: false,
        first_init_relative: false,
        last_relative: false,
        last_init_relative: false,
        last_interval: false,
        ready: false,
        end: EndAction::None,
        end_ready: false,
        has_reject: ports.noutputs() > 1,
        drops: 0,
        stash: VecDeque::new(),
    };
    match (start, start_delay, start_after) {
        (Some(t), None, None) => f.first = t,
        (None, Some(t), None) => (f.first, f.first_init_relative) = (t, true),
        (None, None, Some(t)) => (f.first, f.first_relative) = (t, true),
        (None, None, None) => f.first_relative = true,
        _ => return bad("START, START_AFTER, and START_DELAY are mutually exclusive"),
    }
    match (end, end_after, end_delay, interval) {
        (Some(t), None, None, None) => f.last = t,
        (None, Some(t), None, None) => (f.last, f.last_relative) = (t, true),
        (None, None, Some(t), None) => (f.last, f.last_init_relative) = (t, true),
        (None, None, None, Some(t)) => (f.last, f.last_interval) = (t, true),
        (None, None, None, None) => {}
        _ => return bad("END, END_AFTER, END_DELAY, and INTERVAL are mutually exclusive"),
    }
    f.end = match (call, stop) {
        (Some(_), true) => return bad("END_CALL and STOP are mutually exclusive"),
        (Some(c), false) => parse_call(&c).map_err(ArgError::new)?,
        (None, true) => EndAction::Stop,
        (None, false) => EndAction::None,
    };
    f.end_ready = f.end != EndAction::None;
    Ok(Box::new(f))
}

/// Filters by timestamp. Times are signed nanoseconds since 1970.
#[derive(Debug)]
pub struct TimeFilter {
    first: i64,
    last: i64,
    first_relative: bool,
    first_init_relative: bool,
    last_relative: bool,
    last_init_relative: bool,
    last_interval: bool,
    ready: bool,
    end: EndAction,
    /// The end action may fire (again): set at configuration and whenever
    /// the end moves, as Click's `_last_h_ready`.
    end_ready: bool,
    has_reject: bool,
    drops: u64,
    /// Packets waiting behind an END_CALL call, in arrival order.
    stash: VecDeque<Packet>,
}

/// Most packets waiting behind an END_CALL call; more are dropped.
const MAX_STASH: usize = 4 * MAX_BATCH;

/// Most times the END_CALL handler is called for one packet, each call
/// having moved the end later (Click loops until it stops moving).
const MAX_END_CALLS: usize = 64;

impl TimeFilter {
    fn first_packet(&mut self, t: i64) {
        if self.first_relative {
            self.first = self.first.saturating_add(t);
        }
        if self.last_relative {
            self.last = self.last.saturating_add(t);
        } else if self.last_interval {
            self.last = self.last.saturating_add(self.first);
        }
        self.ready = true;
    }

    /// Whether a packet stamped `t` passes; may call the end action.
    /// With `pause`, returns `None` right after an END_CALL handler call,
    /// so that the packet is judged again once writes that call made to
    /// busy elements (this one) have landed.
    fn passes(&mut self, t: i64, cx: &mut Context<'_>, pause: bool) -> Option<bool> {
        if !self.ready {
            self.first_packet(t);
        }
        if t < self.first {
            return Some(false);
        }
        let mut calls = 0;
        while t >= self.last && self.end_ready && calls < MAX_END_CALLS {
            let prev = self.last;
            self.end_ready = false;
            calls += 1;
            match &self.end {
                EndAction::None => {}
                EndAction::Stop => cx.request_stop(),
                EndAction::Call {
                    element,
                    handler,
                    value,
                } => {
                    let v = value
                        .replace("${t}", &unparse_time(t))
                        .replace("$t", &unparse_time(t));
                    match cx.find_element(element) {
                        Some(i) => {
                            if let Err(e) = cx.call_handler(i, handler, &v, true) {
                                cx.report_error(format!("END_CALL {element}.{handler}: {e}"));
                            }
                        }
                        None => cx.report_error(format!(
                            "END_CALL {element}.{handler}: no element matching `{element}'"
                        )),
                    }
                    if pause {
                        return None;
                    }
                }
            }
            if self.last <= prev {
                break;
            }
        }
        Some(t < self.last)
    }

    /// Filters packets from the front of `src` (at most a batch): the kept
    /// ones in `kept`, the rejected in `rejected`. Stops after an END_CALL
    /// call, the packet that made it back at the front of `src`; returns
    /// whether it did.
    fn filter_paused(
        &mut self,
        src: &mut VecDeque<Packet>,
        kept: &mut Batch,
        rejected: &mut Batch,
        cx: &mut Context<'_>,
    ) -> bool {
        while !kept.is_full() && !rejected.is_full() {
            let Some(p) = src.pop_front() else {
                return false;
            };
            let t = i64::try_from(p.anno().timestamp.0).unwrap_or(i64::MAX);
            match self.passes(t, cx, true) {
                Some(true) => {
                    let _ = kept.push(p);
                }
                Some(false) if self.has_reject => {
                    let _ = rejected.push(p);
                }
                Some(false) => self.drops += 1,
                None => {
                    src.push_front(p);
                    return true;
                }
            }
        }
        false
    }

    /// Filters what waits in `stash`, pushing the results, until it is
    /// empty or an END_CALL call pauses it again (then a timer is set).
    fn drain_stash(&mut self, cx: &mut Context<'_>) {
        let mut src = std::mem::take(&mut self.stash);
        for _ in 0..=MAX_STASH / MAX_BATCH {
            let mut kept = Batch::new();
            let mut rejected = Batch::new();
            let paused = self.filter_paused(&mut src, &mut kept, &mut rejected, cx);
            cx.push(0, &mut kept);
            cx.push(1, &mut rejected);
            if paused {
                let now = cx.now();
                cx.schedule_at(now);
                break;
            }
            if src.is_empty() {
                break;
            }
        }
        self.stash = src;
    }

    fn filter(&mut self, batch: &mut Batch, cx: &mut Context<'_>) -> Batch {
        let mut rejected = Batch::new();
        let mut kept = Batch::new();
        for p in batch.drain() {
            let t = i64::try_from(p.anno().timestamp.0).unwrap_or(i64::MAX);
            let _ = if self.passes(t, cx, false) == Some(true) {
                kept.push(p)
            } else if self.has_reject {
                rejected.push(p)
            } else {
                self.drops += 1;
                Ok::<(), Packet>(())
            };
        }
        batch.append(&mut kept);
        rejected
    }

    fn set(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let t = parse_signed_time(value)?;
        match handler {
            "start" => {
                if !self.ready {
                    self.first_packet(t);
                }
                self.first = t;
            }
            "end" => {
                self.last = t;
                self.last_relative = false;
                self.last_init_relative = false;
                self.last_interval = false;
                self.end_ready = self.end != EndAction::None;
            }
            "interval" => {
                self.last = self.first.saturating_add(t);
                self.end_ready = self.end != EndAction::None;
            }
            "extend_interval" => {
                self.last = self.last.saturating_add(t);
                self.end_ready = self.end != EndAction::None;
            }
            _ => unreachable!(),
        }
        Ok(())
    }
}

impl Element for TimeFilter {
    fn start(&mut self, cx: &mut Context<'_>) {
        let now = i64::try_from(cx.now().0).unwrap_or(i64::MAX);
        if self.first_init_relative {
            self.first = self.first.saturating_add(now);
        }
        if self.last_init_relative {
            self.last = self.last.saturating_add(now);
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if !matches!(self.end, EndAction::Call { .. }) {
            let mut rejected = self.filter(batch, cx);
            cx.push(0, batch);
            cx.push(1, &mut rejected);
            return;
        }
        // With END_CALL, packets behind the one that made a call wait for
        // the call's writes to this element (deferred while it is busy)
        // to land: Click calls the handler there and then.
        if self.stash.len() + batch.len() > MAX_STASH {
            self.drops += batch.len() as u64;
            batch.clear();
            return;
        }
        let waiting = !self.stash.is_empty();
        self.stash.extend(batch.drain());
        if !waiting {
            self.drain_stash(cx);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if !self.stash.is_empty() {
            self.drain_stash(cx);
        }
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        self.drops += self.stash.len() as u64;
        self.stash.clear();
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(0, &mut b, max);
        let mut rejected = self.filter(&mut b, cx);
        cx.push(1, &mut rejected);
        out.append(&mut b);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "start" => Some(unparse_time(self.first)),
            "end" => Some(unparse_time(self.last)),
            "interval" => Some(unparse_time(self.last.saturating_sub(self.first))),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "start" | "end" | "interval" | "extend_interval" => self.set(handler, value),
            _ => Err(format!(
                "no write handler `{handler}` (start, end, interval, extend_interval)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("start"),
            Handler::rw("end"),
            Handler::rw("interval"),
            Handler::w("extend_interval"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    const S: u64 = 1_000_000_000;

    fn at(ns: u64) -> Packet {
        let mut p = Packet::from_slice(&udp(4)).unwrap();
        p.anno_mut().timestamp = Timestamp(ns);
        p
    }

    /// Click's test/analysis/TimeFilter-01 timestamps: 0.1, 0.2, 1.0, 1.2, 5.5.
    fn click_times() -> Vec<u64> {
        vec![S / 10, S / 5, S, S + S / 5, 5 * S + S / 2]
    }

    fn passed(h: &mut Harness, port: usize) -> Vec<u64> {
        h.take(port).iter().map(|p| p.anno().timestamp.0).collect()
    }

    #[test]
    fn absolute_range() {
        let mut h = Harness::push(&CLASS, "0.15, 1.1", 1, 2);
        h.push_packets(0, click_times().into_iter().map(at));
        assert_eq!(passed(&mut h, 0), vec![S / 5, S]);
        assert_eq!(passed(&mut h, 1).len(), 3);
    }

    #[test]
    fn relative_to_first_packet_and_interval() {
        let mut h = Harness::push(&CLASS, "START_AFTER 0.1, END_AFTER 1", 1, 1);
        h.push_packets(0, click_times().into_iter().map(at));
        assert_eq!(passed(&mut h, 0), vec![S / 5, S]);
        assert_eq!(h.stats().get("drops"), Some(3));
        let mut h = Harness::push(&CLASS, "START 1, INTERVAL 0.5", 1, 1);
        h.push_packets(0, click_times().into_iter().map(at));
        assert_eq!(passed(&mut h, 0), vec![S, S + S / 5]);
    }

    #[test]
    fn stop_at_end() {
        let mut h = Harness::push(&CLASS, "END 1, STOP true", 1, 1);
        h.push_packets(0, click_times()[..2].iter().map(|&t| at(t)));
        assert!(!h.stop_requested());
        h.push_packets(0, click_times()[2..].iter().map(|&t| at(t)));
        assert!(h.stop_requested());
        assert_eq!(passed(&mut h, 0), vec![S / 10, S / 5]);
    }

    #[test]
    fn handlers_move_the_range() {
        let mut h = Harness::push(&CLASS, "0, 1", 1, 1);
        h.write_handler("extend_interval", "1").unwrap();
        h.push_packets(0, click_times().into_iter().map(at));
        assert_eq!(passed(&mut h, 0), vec![S / 10, S / 5, S, S + S / 5]);
        let ports = PortInfo::default();
        let mut e = make_element(&CLASS, "1, 3", &ports).unwrap();
        assert_eq!(e.read_handler("interval").as_deref(), Some("2.000000"));
        e.write_handler("interval", "0.5").unwrap();
        assert_eq!(e.read_handler("end").as_deref(), Some("1.500000"));
        e.write_handler("start", "2").unwrap();
        assert_eq!(e.read_handler("start").as_deref(), Some("2.000000"));
        assert!(e.write_handler("end", "later").is_err());
    }

    #[test]
    fn packets_wait_behind_an_end_call() {
        // Click's test/analysis/TimeFilter-01: the END_CALL handler extends
        // this TimeFilter's interval; here the test plays the handler.
        let mut h = Harness::push(&CLASS, "0, 1, END_CALL dut.extend_interval 1", 1, 1);
        h.push_packets(0, click_times().into_iter().map(at));
        // 1.0 made the call: it and the packets behind it wait.
        assert_eq!(passed(&mut h, 0), vec![S / 10, S / 5]);
        assert_eq!(h.timers().len(), 1);
        h.write_handler("extend_interval", "1").unwrap();
        let now = h.now();
        h.advance_to(now);
        // 1.0 and 1.2 pass; 5.5 calls again and waits.
        assert_eq!(passed(&mut h, 0), vec![S, S + S / 5]);
        h.advance_to(now);
        // Nobody extended the end this time: 5.5 is dropped.
        assert!(passed(&mut h, 0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
        assert!(h.timers().is_empty());
    }

    #[test]
    fn argument_conflicts() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "1, START_AFTER 1", &ports).is_err());
        assert!(make_element(&CLASS, "END 1, INTERVAL 2", &ports).is_err());
        assert!(make_element(&CLASS, "STOP true, END_CALL x.y", &ports).is_err());
        assert!(make_element(&CLASS, "END_CALL nodot", &ports).is_err());
        assert!(make_element(&CLASS, "END_CALL s.run $t", &ports).is_ok());
    }
}
