//! `PullSwitch` and `SimplePullSwitch`: pull from one input chosen by a
//! handler, as Click's `elements/standard/pullswitch.cc` and
//! `simplepullswitch.cc`.
//!
//! The two differ only by PullSwitch's empty notifier, which tells the
//! task pulling from it whether the chosen input may have packets
//! (Click's `scheduled` handler of that task reads false while not).
//! bricks' tasks do not sleep, so the notifier is only read, by that
//! handler; it changes as Click's does: off when switched off or when a
//! pull finds nothing and nothing upstream may have packets, on when a
//! pull finds packets or the switch turns to an input that may have some.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo,
};

/// The `PullSwitch` class.
pub static PULL_SWITCH: ElementClass = ElementClass {
    name: "PullSwitch",
    ports: "-/1",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

/// The `SimplePullSwitch` class.
pub static SIMPLE_PULL_SWITCH: ElementClass = ElementClass {
    name: "SimplePullSwitch",
    ports: "-/1",
    processing: "l/l",
    manual: &SIMPLE_MANUAL,
    make: make_simple,
};

static MANUAL: Manual = Manual {
    summary: "forwards pull requests to a settable input",
    synopsis: "PullSwitch([INPUT])",
    description: "On every pull, returns the packets pulled from input INPUT (0 by \
        default). A negative INPUT, or one that is not an input of the element, returns \
        nothing. The `switch` handler reads and sets INPUT while the router runs; a value \
        that names no input reads back as -1. As in Click, the task pulling from it reads \
        `scheduled` false while the chosen input can give nothing (switched off, an \
        empty queue, Idle).",
    ports: "pull inputs (any number); one pull output",
    keywords: &[Keyword {
        name: "INPUT",
        ty: "integer",
        default: Some("0"),
        doc: "input pulled from, negative for none; positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 2) -> q0 :: Queue; Idle -> q1 :: Queue; \
        ps :: PullSwitch(0); q0 -> [0]ps; q1 -> [1]ps; ps -> Unqueue -> Discard;",
    see_also: &["SimplePullSwitch", "Switch", "PrioSched", "RoundRobinSched"],
};

static SIMPLE_MANUAL: Manual = Manual {
    summary: "forwards pull requests to a settable input (no notification)",
    synopsis: "SimplePullSwitch([INPUT])",
    example: "InfiniteSource(LIMIT 2) -> q0 :: Queue; Idle -> q1 :: Queue; \
        ps :: SimplePullSwitch(0); q0 -> [0]ps; q1 -> [1]ps; ps -> Unqueue -> Discard;",
    see_also: &["PullSwitch", "Switch"],
    ..MANUAL
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_switch(args, ports, true)
}

fn make_simple(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_switch(args, ports, false)
}

fn make_switch(
    args: &mut Args<'_>,
    ports: &PortInfo,
    notifies: bool,
) -> Result<Box<dyn Element>, ArgError> {
    let k: i64 = args.read_p("INPUT")?.unwrap_or(0);
    let mut s = PullSwitch {
        input: None,
        ninputs: ports.ninputs(),
        notifies,
        notifier: false,
    };
    s.set(k);
    // Click's PullSwitch starts on when an input is chosen.
    s.notifier = s.input.is_some();
    Ok(Box::new(s))
}

/// Pulls from the chosen input.
#[derive(Debug)]
pub struct PullSwitch {
    input: Option<usize>,
    ninputs: usize,
    /// It has an empty notifier (PullSwitch, not SimplePullSwitch).
    notifies: bool,
    /// The notifier: a pull may find packets.
    notifier: bool,
}

impl PullSwitch {
    fn set(&mut self, k: i64) {
        self.input = usize::try_from(k).ok().filter(|&k| k < self.ninputs);
    }
}

impl Element for PullSwitch {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let Some(i) = self.input else {
            self.notifier = false;
            return;
        };
        let before = out.len();
        cx.pull(i, out, max);
        if out.len() > before {
            self.notifier = true;
        } else if self.notifies && self.notifier && !cx.upstream_active(i) {
            self.notifier = false;
        }
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        self.notifies.then_some(self.notifier)
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if !(write && handler == "switch") {
            return None;
        }
        // Click's `set_input`: off for no input; on when the new input may
        // have packets; otherwise as it was, until a pull finds out.
        Some(self.write_handler(handler, value).map(|()| {
            match self.input {
                None => self.notifier = false,
                Some(i) if cx.upstream_active(i) => self.notifier = true,
                Some(_) => {}
            }
            String::new()
        }))
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "switch").then(|| self.input.map_or(-1, |i| i as i64).to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "switch" => {
                let k = i64::from_arg(value.trim())
                    .map_err(|why| format!("switch takes an integer: {why}"))?;
                self.set(k);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (PullSwitch has `switch`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("switch")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; n],
            outputs: vec![Processing::Pull],
        }
    }

    fn tagged(tag: u8) -> Packet {
        Packet::from_slice(&[tag; 4]).unwrap()
    }

    #[test]
    fn pulls_only_the_chosen_input() {
        for class in [&PULL_SWITCH, &SIMPLE_PULL_SWITCH] {
            let mut h = Harness::new(class, "-1", ports(3));
            h.feed(0, [tagged(0x11), tagged(0x11)]);
            h.feed(1, [tagged(0x22)]);
            assert!(h.pull(0, 8).is_empty());
            h.write_handler("switch", "1").unwrap();
            let got = h.pull(0, 8);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].data()[0], 0x22);
            h.write_handler("switch", "0").unwrap();
            assert_eq!(h.pull(0, 1).len(), 1);
            h.write_handler("switch", "9").unwrap();
            assert!(h.pull(0, 8).is_empty());
            assert!(h.write_handler("switch", "x").is_err());
        }
    }

    #[test]
    fn switch_read_handler() {
        let mut e = bricks_runtime::testing::make_element(&PULL_SWITCH, "", &ports(2)).unwrap();
        assert_eq!(e.read_handler("switch").as_deref(), Some("0"));
        e.write_handler("switch", "2").unwrap();
        assert_eq!(e.read_handler("switch").as_deref(), Some("-1"));
        e.write_handler("switch", "1").unwrap();
        assert_eq!(e.read_handler("switch").as_deref(), Some("1"));
    }
}
