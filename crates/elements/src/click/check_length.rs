//! `CheckLength`: sends packets longer than a length to output 1, as
//! Click's `elements/standard/checklength.cc`. A router puts it before an
//! interface whose MTU a packet must not exceed, for IPv6 (which routers do
//! not fragment: RFC 8200 section 5) with `ICMP6Error(..., toobig)` on
//! output 1.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};

/// The `CheckLength` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckLength",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sends packets longer than LENGTH to output 1",
    synopsis: "CheckLength(LENGTH)",
    description: "Packets of at most LENGTH bytes leave on output 0. Longer packets leave \
        on output 1, or are dropped and counted when it is not connected; in pull mode \
        they are pushed out of output 1 and the pull goes on. The `length` handler reads \
        and sets LENGTH while the router runs. Before an IPv6 interface, `CheckLength(1500)` \
        with `ICMP6Error(ADDR, toobig, 0, 1500)` on output 1 answers packets larger than \
        the link's MTU with Packet Too Big, as RFC 8200 section 5 asks of a router.",
    ports: "one input; output 0 packets of at most LENGTH bytes (agnostic); optional \
        output 1 longer packets (push)",
    keywords: &[Keyword {
        name: "LENGTH",
        ty: "unsigned",
        default: None,
        doc: "the most bytes a packet may have to leave on output 0; positional",
    }],
    counters: &[(
        "long",
        "packets longer than LENGTH (sent to output 1 or dropped)",
    )],
    example: "InfiniteSource(LENGTH 1600, LIMIT 2) -> c :: CheckLength(1500) -> Discard; \
        c[1] -> Print(long) -> Discard;",
    see_also: &["ICMP6Error", "IPFragmenter", "Truncate"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(CheckLength {
        max: args.read_mp("LENGTH")?,
        has_long: ports.noutputs() > 1,
        long: 0,
    }))
}

/// Checks lengths.
#[derive(Debug)]
pub struct CheckLength {
    max: u32,
    has_long: bool,
    long: u64,
}

impl CheckLength {
    #[inline]
    fn verdict(&mut self, len: usize) -> Option<usize> {
        if len <= self.max as usize {
            return Some(0);
        }
        self.long += 1;
        self.has_long.then_some(1)
    }
}

impl Element for CheckLength {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p.len()));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p.len()));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("long", self.long);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "length").then(|| self.max.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "length" => {
                self.max = u32::from_arg(value.trim())
                    .map_err(|why| format!("length takes an unsigned integer: {why}"))?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (CheckLength has `length`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("length")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn long_packets_leave_on_output_1_in_order() {
        let mut h = Harness::push(&CLASS, "40", 1, 2);
        let frame = udp(30);
        assert!(frame.len() > 40);
        h.push_bytes(0, &frame[..40]);
        h.push_bytes(0, &frame);
        h.push_bytes(0, &frame[..20]);
        let short: Vec<usize> = h.take(0).iter().map(|p| p.len()).collect();
        assert_eq!(short, [40, 20]);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("long"), Some(1));
    }

    #[test]
    fn without_output_1_long_packets_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "LENGTH 10", 1, 1);
        h.push_bytes(0, &udp(30));
        h.push_bytes(0, &[0u8; 10]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("long"), Some(1));
    }

    #[test]
    fn the_length_handler_reads_and_sets() {
        let mut h = Harness::push(&CLASS, "100", 1, 2);
        h.write_handler("length", "10").unwrap();
        h.push_bytes(0, &udp(30));
        assert_eq!(h.take(1).len(), 1);
        assert!(h.write_handler("length", "ten").is_err());
        assert!(h.write_handler("nbytes", "10").is_err());
    }
}
