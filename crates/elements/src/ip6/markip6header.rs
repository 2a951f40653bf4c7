//! `MarkIP6Header`: tells later elements where the IPv6 header is, without
//! checking it (Click's `elements/ip6/markip6header.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};

/// The `MarkIP6Header` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MarkIP6Header",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the IPv6 network header annotation",
    synopsis: "MarkIP6Header([OFFSET])",
    description: "Marks each packet's network header as an IPv6 header starting OFFSET \
        bytes into the data, so that elements which work on the IPv6 header (SetIP6DSCP, \
        DecIP6HLIM, IP6Print, ...) find it. Nothing is checked and nothing is dropped: a \
        packet too short for the header passes too, and the elements that read the header \
        check its length. Use CheckIP6Header on packets from an untrusted link, which sets \
        the same annotation after RFC 8200's checks. Difference from Click: OFFSET is \
        unsigned (Click takes a negative offset, pointing before the data).",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "OFFSET",
        ty: "unsigned integer",
        default: Some("0"),
        doc: "where the IPv6 header starts in the packet data; positional",
    }],
    counters: &[],
    example: "InfiniteSource(DATA \\<52 54 00 aa 00 02 52 54 00 aa 00 01 86 dd \
        60 00 00 00 00 00 3b 40 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 \
        20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02>, LIMIT 1) \
        -> MarkIP6Header(14) -> IP6Print(marked) -> Discard;",
    see_also: &["CheckIP6Header", "MarkIPHeader", "Strip"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(MarkIP6Header {
        offset: args.read_p("OFFSET")?.unwrap_or(0),
    }))
}

/// Sets the network header annotation.
#[derive(Debug)]
pub struct MarkIP6Header {
    offset: usize,
}

impl MarkIP6Header {
    #[inline]
    fn mark(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            p.set_network_header(self.offset);
        }
    }
}

impl Element for MarkIP6Header {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.mark(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.mark(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::ECHO_REQUEST;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn marks_the_header() {
        let mut frame = vec![
            0x52, 0x54, 0, 0xaa, 0, 2, 0x52, 0x54, 0, 0xaa, 0, 1, 0x86, 0xdd,
        ];
        frame.extend_from_slice(&ECHO_REQUEST);
        let mut h = Harness::push(&CLASS, "14", 1, 1);
        h.push_bytes(0, &frame);
        let out = h.take(0);
        assert_eq!(out[0].network_header_offset(), Some(14));
        assert_eq!(out[0].network_header().unwrap(), &ECHO_REQUEST[..]);
        assert_eq!(out[0].data(), &frame[..]);

        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &ECHO_REQUEST);
        let out = h.take(0);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].l3_chunk::<40>().unwrap()[..], ECHO_REQUEST[..40]);
    }

    #[test]
    fn short_packets_pass_unread() {
        let mut h = Harness::push(&CLASS, "OFFSET 14", 1, 1);
        h.push_bytes(0, &[]);
        h.push_bytes(0, &ECHO_REQUEST[..20]);
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        // The marked header holds no 40 bytes: readers find it short.
        assert!(out.iter().all(|p| p.l3_chunk::<40>().is_none()));
        let mut h = Harness::push(&CLASS, &usize::MAX.to_string(), 1, 1);
        h.push_bytes(0, &ECHO_REQUEST);
        let out = h.take(0);
        assert_eq!(out[0].network_header().unwrap(), &[] as &[u8]);
    }

    #[test]
    fn pull_marks_too() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "OFFSET 2", ports);
        h.feed(0, [Packet::from_slice(&[0; 50]).unwrap()]);
        let out = h.pull(0, 8);
        assert_eq!(out[0].network_header_offset(), Some(2));
    }

    #[test]
    fn offset_is_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("-1").unwrap_err().contains("OFFSET"));
        assert!(make("x").unwrap_err().contains("OFFSET"));
        assert!(make("14, 15").is_err());
        assert!(make("LENGTH 4").is_err());
    }
}
