//! `Switch`, `StaticSwitch` and `RandomSwitch`: send every packet out of one
//! output, chosen by a handler, by the configuration, or at random (Click's
//! `elements/standard/switch.cc`, `staticswitch.cc`, `randomswitch.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};

/// The `Switch` class.
pub static SWITCH: ElementClass = ElementClass {
    name: "Switch",
    ports: "1/-",
    processing: "h/h",
    manual: &SWITCH_MANUAL,
    make: make_switch,
};

/// The `StaticSwitch` class.
pub static STATIC_SWITCH: ElementClass = ElementClass {
    name: "StaticSwitch",
    ports: "1/-",
    processing: "h/h",
    manual: &STATIC_SWITCH_MANUAL,
    make: make_static_switch,
};

/// The `RandomSwitch` class.
pub static RANDOM_SWITCH: ElementClass = ElementClass {
    name: "RandomSwitch",
    ports: "1/1-",
    processing: "h/h",
    manual: &RANDOM_SWITCH_MANUAL,
    make: make_random_switch,
};

static SWITCH_MANUAL: Manual = Manual {
    summary: "sends packets to one output, chosen by a handler",
    synopsis: "Switch([OUTPUT])",
    description: "Sends every packet out of output OUTPUT (0 by default). OUTPUT -1, or a \
        number that is not an output of the element, drops every packet (counted). Writing \
        the `switch` handler (`bricks ctl write NAME.switch K`) changes the output while \
        the router runs, as in Click; a value that is not an output switches packets off \
        (-1). The `switch` counter reads the current output; Click's -1 reads as the \
        number of outputs, which names no output.",
    ports: "one push input; push outputs",
    keywords: &[Keyword {
        name: "OUTPUT",
        ty: "integer",
        default: Some("0"),
        doc: "output to send packets to, -1 to drop them; positional",
    }],
    counters: &[
        (
            "switch",
            "the output packets go to (write to change); the number of outputs when off",
        ),
        ("drops", "packets dropped while switched off"),
    ],
    example: "InfiniteSource(LIMIT 2) -> s :: Switch(1); s[0] -> Discard; \
        s[1] -> Print(one) -> Discard;",
    see_also: &["StaticSwitch", "RandomSwitch", "PaintSwitch"],
};

static STATIC_SWITCH_MANUAL: Manual = Manual {
    summary: "sends packets to one output, fixed by the configuration",
    synopsis: "StaticSwitch(OUTPUT)",
    description: "Sends every packet out of output OUTPUT. OUTPUT -1, or a number that \
        is not an output of the element, drops every packet (counted). Unlike Switch, the \
        output cannot change while the router runs.",
    ports: "one push input; push outputs",
    keywords: &[Keyword {
        name: "OUTPUT",
        ty: "integer",
        default: None,
        doc: "output to send packets to, -1 to drop them; positional",
    }],
    counters: &[("drops", "packets dropped (OUTPUT names no output)")],
    example: "InfiniteSource(LIMIT 2) -> s :: StaticSwitch(0); s[0] -> Discard; s[1] -> Discard;",
    see_also: &["Switch"],
};

static RANDOM_SWITCH_MANUAL: Manual = Manual {
    summary: "sends each packet to an output chosen at random",
    synopsis: "RandomSwitch",
    description: "Sends each packet out of an output chosen uniformly at random, \
        independently for every packet (a xorshift64* generator per element; each \
        instance starts from its own fixed seed, so a run is repeatable).",
    ports: "one push input; one or more push outputs",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 10) -> s :: RandomSwitch; s[0] -> Discard; s[1] -> Discard;",
    see_also: &["Switch", "RoundRobinSwitch", "HashSwitch"],
};

/// An output number as Click's switches take it: an integer, and -1 (or
/// any negative number, or one past the outputs) for none.
fn output_of(k: i64, noutputs: usize) -> Option<usize> {
    usize::try_from(k).ok().filter(|&k| k < noutputs)
}

fn make_switch(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let k: i64 = args.read_p("OUTPUT")?.unwrap_or(0);
    Ok(Box::new(Switch {
        output: output_of(k, ports.noutputs()),
        noutputs: ports.noutputs(),
        drops: 0,
    }))
}

fn make_static_switch(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let k: i64 = args.read_mp("OUTPUT")?;
    Ok(Box::new(StaticSwitch {
        output: output_of(k, ports.noutputs()),
        drops: 0,
    }))
}

fn make_random_switch(
    _args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(RandomSwitch {
        noutputs: ports.noutputs().max(1) as u64,
        rng: 0x2545_f491_4f6c_dd1d,
    }))
}

/// Forwards `batch` out of `output`, or drops and counts it.
#[inline]
fn forward(output: Option<usize>, batch: &mut Batch, drops: &mut u64, cx: &mut Context<'_>) {
    match output {
        Some(port) => cx.push(port, batch),
        None => {
            *drops += batch.len() as u64;
            batch.clear();
        }
    }
}

/// Sends packets to the output its `switch` handler names.
#[derive(Debug)]
pub struct Switch {
    output: Option<usize>,
    noutputs: usize,
    drops: u64,
}

impl Element for Switch {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        forward(self.output, batch, &mut self.drops, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("switch", self.output.unwrap_or(self.noutputs) as u64);
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        // Click keeps an output out of range as -1 and prints it so.
        (handler == "switch").then(|| match self.output {
            Some(k) => k.to_string(),
            None => "-1".into(),
        })
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "switch" => {
                let k = i64::from_arg(value.trim())
                    .map_err(|why| format!("Switch output must be an integer: {why}"))?;
                self.output = output_of(k, self.noutputs);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (Switch has `switch`)"
            )),
        }
    }
}

/// Sends packets to a fixed output.
#[derive(Debug)]
pub struct StaticSwitch {
    output: Option<usize>,
    drops: u64,
}

impl Element for StaticSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        forward(self.output, batch, &mut self.drops, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

/// Sends each packet to a random output.
#[derive(Debug)]
pub struct RandomSwitch {
    noutputs: u64,
    rng: u64,
}

impl RandomSwitch {
    /// xorshift64* (Vigna).
    #[inline]
    fn next(&mut self) -> u64 {
        crate::rng::xorshift64star(&mut self.rng)
    }
}

impl Element for RandomSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let n = self.noutputs;
        if n == 1 {
            cx.push(0, batch);
            return;
        }
        cx.push_classified(batch, |_| {
            // The high bits are the best ones; multiply-shift maps them to
            // 0..n without a division.
            Some((((self.next() >> 32) * n) >> 32) as usize)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_runtime::testing::{make_element, Harness};

    /// An ARP request, 42 bytes, tagged in its last byte.
    fn arp(tag: u8) -> Packet {
        let mut f = vec![0xffu8; 6];
        f.extend([0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06]);
        f.extend([0, 1, 8, 0, 6, 4, 0, 1]);
        f.extend([0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 10, 0, 0, 1]);
        f.extend([0, 0, 0, 0, 0, 0, 10, 0, 0, tag]);
        Packet::from_slice(&f).unwrap()
    }

    fn tags(h: &mut Harness, port: usize) -> Vec<u8> {
        h.take_bytes(port).iter().map(|f| f[41]).collect()
    }

    #[test]
    fn switch_follows_its_handler() {
        let mut h = Harness::push(&SWITCH, "", 1, 2);
        h.push_packets(0, [arp(1)]);
        assert_eq!(tags(&mut h, 0), vec![1]);
        assert_eq!(h.stats().get("switch"), Some(0));
        h.write_handler("switch", "1").unwrap();
        h.push_packets(0, [arp(2), arp(3)]);
        assert_eq!(tags(&mut h, 1), vec![2, 3]);
        assert_eq!(h.stats().get("switch"), Some(1));
        assert_eq!(h.read_handler("switch").as_deref(), Ok("1"));
        h.write_handler("switch", "-1").unwrap();
        h.push_packets(0, [arp(4)]);
        assert!(tags(&mut h, 0).is_empty() && tags(&mut h, 1).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
        assert_eq!(h.stats().get("switch"), Some(2));
        // Out of range is off, like -1; garbage is refused and changes nothing.
        h.write_handler("switch", "0").unwrap();
        h.write_handler("switch", "7").unwrap();
        assert_eq!(h.stats().get("switch"), Some(2));
        assert_eq!(h.read_handler("switch").as_deref(), Ok("-1"));
        assert!(h.write_handler("switch", "one").is_err());
        assert!(h.write_handler("output", "0").is_err());
        assert_eq!(h.stats().get("switch"), Some(2));
    }

    #[test]
    fn switch_starts_at_its_argument() {
        let mut h = Harness::push(&SWITCH, "1", 1, 2);
        h.push_packets(0, [arp(9)]);
        assert_eq!(tags(&mut h, 1), vec![9]);
    }

    #[test]
    fn static_switch_fixed_or_off() {
        let mut h = Harness::push(&STATIC_SWITCH, "1", 1, 2);
        h.push_packets(0, [arp(1), arp(2)]);
        assert_eq!(tags(&mut h, 1), vec![1, 2]);
        assert!(h.write_handler("switch", "0").is_err());
        let mut h = Harness::push(&STATIC_SWITCH, "-1", 1, 2);
        h.push_packets(0, [arp(1)]);
        assert_eq!(h.stats().get("drops"), Some(1));
        assert!(make_element(&STATIC_SWITCH, "", &Default::default()).is_err());
    }

    #[test]
    fn random_switch_uses_every_output() {
        let mut h = Harness::push(&RANDOM_SWITCH, "", 1, 3);
        h.push_packets(0, (0..=255).map(arp));
        let counts: Vec<usize> = (0..3).map(|p| h.take(p).len()).collect();
        assert_eq!(counts.iter().sum::<usize>(), 256);
        assert!(counts.iter().all(|&c| c > 40), "{counts:?}");
    }
}
