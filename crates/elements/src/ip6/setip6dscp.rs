//! `SetIP6DSCP`: sets the Differentiated Services code point of IPv6
//! packets, the upper six bits of the traffic class (RFC 8200 section 7,
//! RFC 2474 section 3), as Click's `elements/ip6/setip6dscp.cc`. IPv6 has
//! no header checksum to update.

use crate::click::set_ip_dscp::{read_dscp, write_dscp};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `SetIP6DSCP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetIP6DSCP",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets IPv6 packets' DSCP fields",
    synopsis: "SetIP6DSCP(DSCP)",
    description: "Sets the Differentiated Services code point, the upper 6 bits of the \
        traffic class, of each IPv6 packet to DSCP; the version, the two ECN bits and the \
        flow label are kept. The IPv6 header is found at the network header annotation \
        (MarkIP6Header, CheckIP6Header), else at the start of the packet. The `dscp` \
        handler reads and sets DSCP while the router runs. Differences from Click: a \
        packet without the network header annotation is taken to start with its IPv6 \
        header (Click requires the annotation), and a packet too short for a 40-byte \
        IPv6 header there is dropped and counted (Click writes into it regardless).",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "DSCP",
        ty: "unsigned, 0 to 63",
        default: None,
        doc: "the code point; positional",
    }],
    counters: &[("truncated", "packets too short for an IPv6 header, dropped")],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 00 3b 40 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02>, \
        LIMIT 1) -> MarkIP6Header -> SetIP6DSCP(46) -> IP6Print(ef, CONTENTS true, \
        NBYTES 4) -> Discard;",
    see_also: &["SetIPDSCP", "MarkIP6Header", "CheckIP6Header"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let dscp = read_dscp(args)?;
    Ok(Box::new(SetIP6DSCP { dscp, truncated: 0 }))
}

/// Sets the DSCP.
#[derive(Debug)]
pub struct SetIP6DSCP {
    dscp: u8,
    truncated: u64,
}

impl SetIP6DSCP {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        // The DSCP is bits 4 to 9 of the header's first 32-bit word (Click's
        // IP6_DSCP_MASK 0x0fc00000): the low nibble of byte 0 and the high
        // two bits of byte 1.
        let (hi, lo) = (self.dscp >> 2, (self.dscp & 3) << 6);
        let mut truncated = 0;
        b.retain(|p: &mut Packet| match p.l3_chunk_mut::<40>() {
            Some(h) => {
                h[0] = (h[0] & 0xf0) | hi;
                h[1] = (h[1] & 0x3f) | lo;
                true
            }
            None => {
                truncated += 1;
                false
            }
        });
        self.truncated += truncated;
    }
}

impl Element for SetIP6DSCP {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("truncated", self.truncated);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "dscp").then(|| self.dscp.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        write_dscp("SetIP6DSCP", &mut self.dscp, handler, value)
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        (handler == "dscp").then_some("0 DSCP")
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("dscp")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::ECHO_REQUEST;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn sets_dscp_keeps_the_rest() {
        // ECHO_REQUEST starts 60 02 b9 c8: traffic class 0x00, flow label
        // 0x2b9c8. With ECN bits 11 (CE) set first, DSCP 46 (EF) gives
        // traffic class 0xbb: 6b b2 b9 c8.
        let mut p = ECHO_REQUEST;
        p[1] |= 0x30;
        let mut h = Harness::push(&CLASS, "DSCP 46", 1, 1);
        h.push_bytes(0, &p);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][..4], &[0x6b, 0xb2, 0xb9, 0xc8]);
        assert_eq!(&out[0][4..], &p[4..]);
        // And back to 0, the ECN bits and flow label still there.
        let mut h = Harness::push(&CLASS, "0", 1, 1);
        h.push_bytes(0, &out[0]);
        assert_eq!(&h.take_bytes(0)[0][..4], &[0x60, 0x32, 0xb9, 0xc8]);
        // DSCP 63 sets all six bits, nothing else.
        let mut h = Harness::push(&CLASS, "63", 1, 1);
        h.push_bytes(0, &ECHO_REQUEST);
        assert_eq!(&h.take_bytes(0)[0][..4], &[0x6f, 0xc2, 0xb9, 0xc8]);
    }

    #[test]
    fn header_at_the_annotation() {
        let mut frame = vec![0xee; 14];
        frame.extend_from_slice(&ECHO_REQUEST);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "10", ports);
        h.feed(0, [p]);
        let out = h.pull(0, 4);
        let d = out[0].data();
        assert_eq!(&d[..14], &[0xee; 14]);
        assert_eq!(&d[14..18], &[0x62, 0x82, 0xb9, 0xc8]);
        assert_eq!(&d[18..], &ECHO_REQUEST[4..]);
    }

    #[test]
    fn short_packets_are_dropped() {
        let mut h = Harness::push(&CLASS, "46", 1, 1);
        h.push_bytes(0, &[]);
        h.push_bytes(0, &ECHO_REQUEST[..39]);
        h.push_bytes(0, &ECHO_REQUEST[..40]);
        let mut marked = Packet::from_slice(&ECHO_REQUEST).unwrap();
        marked.set_network_header(20);
        h.push_packets(0, [marked]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("truncated"), Some(3));
    }

    #[test]
    fn dscp_handler_and_range() {
        let mut e = make_element(&CLASS, "DSCP 10", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("dscp").as_deref(), Some("10"));
        e.write_handler("dscp", " 2\n").unwrap();
        assert_eq!(e.read_handler("dscp").as_deref(), Some("2"));
        assert!(e.write_handler("dscp", "64").is_err());
        assert!(e.write_handler("class", "1").is_err());
        let h = Harness::push(&CLASS, "10", 1, 1);
        h.write_handler("dscp", "0x2e").unwrap();
        assert_eq!(h.read_handler("dscp").unwrap(), "46");
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("64").unwrap_err().contains("DSCP"));
        assert!(make("-1").unwrap_err().contains("DSCP"));
        assert!(make("ef").unwrap_err().contains("DSCP"));
        assert!(make("").unwrap_err().contains("DSCP"));
        assert!(make("1, 2").is_err());
    }
}
