//! `AggregateLength`: sets the aggregate annotation to the packet's length
//! (Click's `elements/analysis/aggregatelen.cc`).
//!
//! The length is the packet's bytes, from its start or, with IP, from its
//! network header, plus the extra length annotation (the bytes a trace
//! cut off). The aggregate annotation is the packet's `flow` annotation.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `AggregateLength` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateLength",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets aggregate annotation based on packet length",
    synopsis: "AggregateLength([KEYWORDS])",
    description: "Sets the aggregate annotation of every passing packet to its length plus \
        its extra length annotation (bytes a trace cut off), modulo 2^32. With IP true the \
        length counts from the network header: a network header the packet was stripped \
        past counts the stripped bytes, as in Click; a packet without a network header \
        annotation is dropped (Click's element has one output, so its `output 1` for such \
        packets is never there) and counted in `no_ip`. Same as Click.",
    ports: "one input, one output; push or pull",
    keywords: &[Keyword {
        name: "IP",
        ty: "boolean",
        default: Some("false"),
        doc: "count from the network header",
    }],
    counters: &[(
        "no_ip",
        "packets dropped with IP true and no network header",
    )],
    example: "InfiniteSource(LIMIT 1, STOP true) -> AggregateLength -> Discard;",
    see_also: &["AggregateIP", "AggregateCounter"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let ip = args.read::<bool>("IP")?.unwrap_or(false);
    Ok(Box::new(AggregateLength { ip, no_ip: 0 }))
}

/// One worker's AggregateLength.
#[derive(Debug)]
pub struct AggregateLength {
    ip: bool,
    no_ip: u64,
}

impl AggregateLength {
    /// Sets `p`'s aggregate (Click's `handle_packet`); `None` drops it.
    fn classify(&mut self, p: &mut Packet) -> Option<usize> {
        let len = if self.ip {
            let Some(l3) = p.anno().l3_offset() else {
                self.no_ip += 1;
                return None;
            };
            // Click's `length() - network_header_offset()`, where the
            // offset is negative once the header was stripped.
            let from = i64::from(l3) - p.head_offset() as i64;
            (p.len() as i64 - from) as u32
        } else {
            p.len() as u32
        };
        p.anno_mut().flow = len.wrapping_add(p.anno().extra_length);
        Some(0)
    }
}

impl Element for AggregateLength {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.classify(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.classify(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("no_ip", self.no_ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    /// Ethernet (type IPv4) and a UDP packet 18.26.4.44:30 -> 10.0.0.4:40
    /// with 4 bytes of data: 14 + 32 bytes.
    fn frame() -> Packet {
        let mut b = vec![0u8; 12];
        b.extend_from_slice(&[0x08, 0x00]);
        b.extend_from_slice(&[
            0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 0x12, 0x1a,
            0x04, 0x2c, 0x0a, 0x00, 0x00, 0x04, 0x00, 0x1e, 0x00, 0x28, 0x00, 0x0c, 0x00, 0x00,
            0xde, 0xad, 0xbe, 0xef,
        ]);
        Packet::from_slice(&b).unwrap()
    }

    fn lengths(args: &str, packets: Vec<Packet>) -> (Vec<u32>, Option<u64>) {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, packets);
        let got = h.take(0).iter().map(|p| p.anno().flow).collect();
        (got, h.stats().get("no_ip"))
    }

    #[test]
    fn whole_packet_plus_extra_length() {
        let mut p = frame();
        p.anno_mut().extra_length = 1000;
        assert_eq!(lengths("", vec![frame(), p]).0, vec![46, 1046]);
    }

    #[test]
    fn ip_counts_from_the_network_header() {
        let mut p = frame();
        p.set_network_header(14);
        let mut stripped = frame();
        stripped.set_network_header(14);
        stripped.pull_front(20);
        assert_eq!(
            lengths("IP true", vec![p, stripped, frame()]),
            (vec![32, 32], Some(1))
        );
    }

    #[test]
    fn truncated_and_empty_packets() {
        let mut empty = Packet::from_slice(&[]).unwrap();
        empty.anno_mut().extra_length = u32::MAX;
        assert_eq!(
            lengths("", vec![Packet::from_slice(&[0x45]).unwrap(), empty]).0,
            vec![1, u32::MAX]
        );
    }
}
