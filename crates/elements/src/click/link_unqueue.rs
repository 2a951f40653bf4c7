//! `LinkUnqueue`: emulates a serial link of some latency and bandwidth, as
//! Click's `elements/standard/linkunqueue.cc`.

use crate::standard::bw_rated_unqueue::parse_bandwidth;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::Timestamp;
use std::collections::VecDeque;
use std::time::Duration;

/// The `LinkUnqueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "LinkUnqueue",
    ports: "1/1",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "link emulator",
    synopsis: "LinkUnqueue(LATENCY, BANDWIDTH)",
    description: "Pulls packets from its input and pushes each out when it would have \
        crossed a serial link of latency LATENCY and bandwidth BANDWIDTH (Click's notation: \
        `384kbps`, `100kb/s`, `1MBps`): at least LATENCY later, plus its length (with its \
        extra length annotation, as Click's) at \
        BANDWIDTH (in whole microseconds, as Click), plus the time the packets ahead of it \
        still occupy the link. It pulls only while the link has room, so a Queue in front \
        holds the backlog. The packet's timestamp becomes the time it leaves. Handlers: \
        `latency` and `bandwidth` read the arguments, `size` the packets on the link, \
        `reset` drops them.",
    ports: "one pull input; one push output",
    keywords: &[
        Keyword {
            name: "LATENCY",
            ty: "duration",
            default: None,
            doc: "one-way delay; positional",
        },
        Keyword {
            name: "BANDWIDTH",
            ty: "bandwidth, at least 100 bytes/s",
            default: None,
            doc: "link rate; positional",
        },
    ],
    counters: &[
        ("size", "packets on the emulated link now"),
        ("drops", "packets dropped by the reset handler"),
    ],
    example: "InfiniteSource(LIMIT 3, LENGTH 100) -> Queue -> LinkUnqueue(5ms, 1Mbps) \
        -> Print(TIMESTAMP true) -> Discard;",
    see_also: &["DelayUnqueue", "BandwidthRatedUnqueue", "Queue"],
};

/// Most packets on the emulated link at once.
const MAX_IN_FLIGHT: usize = 65_536;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let latency: Duration = args.read_mp("LATENCY")?;
    let bw: String = args.read_mp("BANDWIDTH")?;
    let bandwidth =
        parse_bandwidth(&bw).map_err(|e| ArgError::new(format!("bad argument BANDWIDTH: {e}")))?;
    if bandwidth < 100 {
        return Err(ArgError::new("bandwidth too small, minimum 100Bps"));
    }
    Ok(Box::new(LinkUnqueue {
        latency: u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX),
        latency_text: format!("{}.{:06}", latency.as_secs(), latency.subsec_micros()),
        bandwidth,
        link: VecDeque::new(),
        back_to_back: false,
        timer: None,
        drops: 0,
    }))
}

/// A link in a box.
#[derive(Debug)]
pub struct LinkUnqueue {
    latency: u64,
    latency_text: String,
    /// Bytes per second.
    bandwidth: u64,
    /// Packets on the link; each timestamp is the time it leaves.
    link: VecDeque<Packet>,
    back_to_back: bool,
    timer: Option<u64>,
    drops: u64,
}

impl LinkUnqueue {
    /// Click's `delay_by_bandwidth`: the serialisation time in whole
    /// microseconds, as nanoseconds.
    fn serialisation(&self, p: &Packet) -> u64 {
        // The bytes it stands for, as Click's: its data plus its extra length.
        let len = p.len() as u64 + u64::from(p.anno().extra_length);
        let us = (len * 10_000) / (self.bandwidth / 100);
        us * 1000
    }
}

impl Element for LinkUnqueue {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let now = cx.now().0;
        let now_delayed = now.saturating_add(self.latency);
        let mut worked = false;
        let mut input_empty = false;
        while self.link.len() < MAX_IN_FLIGHT
            && self
                .link
                .back()
                .is_none_or(|t| t.anno().timestamp.0 <= now_delayed)
        {
            let mut b = Batch::new();
            cx.pull(0, &mut b, 1);
            let Some(mut p) = b.pop() else {
                self.back_to_back = false;
                input_empty = true;
                break;
            };
            let start = match self.link.back() {
                Some(t) if self.back_to_back => t.anno().timestamp.0,
                _ => now_delayed,
            };
            let at = start.saturating_add(self.serialisation(&p));
            p.anno_mut().timestamp = Timestamp(at);
            self.link.push_back(p);
            self.back_to_back = true;
            worked = true;
        }
        let mut out = Batch::new();
        while self
            .link
            .front()
            .is_some_and(|p| p.anno().timestamp.0 <= now)
            && !out.is_full()
        {
            if let Some(p) = self.link.pop_front() {
                let _ = out.push(p);
            }
        }
        if !out.is_empty() {
            cx.push(0, &mut out);
            worked = true;
        }
        let (Some(head), Some(tail)) = (self.link.front(), self.link.back()) else {
            return if worked {
                TaskResult::Worked
            } else {
                TaskResult::Idle
            };
        };
        // Wake when the head leaves, or when the link has room again if
        // the input may have more (Click asks its upstream notifier; here
        // the last pull says).
        let mut expiry = head.anno().timestamp.0;
        if !input_empty {
            expiry = expiry.min(tail.anno().timestamp.0.saturating_sub(self.latency));
        }
        if expiry > now && self.timer != Some(expiry) {
            self.timer = Some(expiry);
            cx.schedule_at(Timestamp(expiry));
        }
        if worked {
            TaskResult::Worked
        } else {
            TaskResult::Waiting
        }
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        self.timer = None;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("size", self.link.len() as u64);
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "latency" => Some(self.latency_text.clone()),
            "bandwidth" => Some(format!("{}Bps", self.bandwidth)),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                self.drops += self.link.len() as u64;
                self.link.clear();
                self.back_to_back = false;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (LinkUnqueue has `reset`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("latency"),
            Handler::r("bandwidth"),
            Handler::w("reset"),
        ];
        H
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        self.link.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    const US: u64 = 1000;

    /// An IPv4 header of `len` bytes total from `src`.
    fn ip(len: usize, last: u8) -> Packet {
        let mut f = vec![0u8; len];
        f[0] = 0x45;
        f[15] = last;
        Packet::from_slice(&f).unwrap()
    }

    #[test]
    fn click_link_timing() {
        // Click's test/standard/LinkUnqueue-01: 5 ms, 100 kb/s (12500
        // bytes/s); packets of 20, 20, 1600, 20, 1600, 20 bytes leave at
        // 0, 1.6, 129.6, 131.2, 259.2, 260.8 ms after the first.
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Push],
        };
        let mut h = Harness::new(&CLASS, "0.005s, 100kb/s", ports);
        let lens = [20, 20, 1600, 20, 1600, 20];
        h.feed(0, lens.iter().enumerate().map(|(i, &l)| ip(l, i as u8 + 1)));
        let t0 = 1_000_000_000 * US;
        h.advance_to(Timestamp(t0));
        let mut left = Vec::new();
        for _ in 0..1000 {
            let r = h.run_task();
            left.extend(
                h.take(0)
                    .iter()
                    .map(|p| (p.anno().timestamp.0, p.data()[15])),
            );
            // The engine runs the task every round, jumping the clock to
            // the next timer when nothing else is due.
            match h.timers().into_iter().min() {
                Some(t) if r != TaskResult::Worked => h.advance_to(t),
                None if r == TaskResult::Idle => break,
                _ => {}
            }
        }
        let first = left[0].0;
        let got: Vec<(u64, u8)> = left.iter().map(|&(t, s)| ((t - first) / US, s)).collect();
        assert_eq!(
            got,
            vec![
                (0, 1),
                (1600, 2),
                (129_600, 3),
                (131_200, 4),
                (259_200, 5),
                (260_800, 6)
            ]
        );
        assert_eq!(first, t0 + 5000 * US + 1600 * US);
    }

    #[test]
    fn handlers_and_arguments() {
        let ports = PortInfo::default();
        let mut e = make_element(&CLASS, "5ms, 1Mbps", &ports).unwrap();
        assert_eq!(e.read_handler("latency").as_deref(), Some("0.005000"));
        assert_eq!(e.read_handler("bandwidth").as_deref(), Some("125000Bps"));
        e.write_handler("reset", "").unwrap();
        assert!(make_element(&CLASS, "5ms, 99Bps", &ports).is_err());
        assert!(make_element(&CLASS, "5ms", &ports).is_err());
    }
}
