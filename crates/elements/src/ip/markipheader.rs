//! `MarkIPHeader`: tells later elements where the IPv4 header is, without
//! checking it (Click's element of the same name).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};

/// The `MarkIPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MarkIPHeader",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the network header annotation",
    synopsis: "MarkIPHeader([OFFSET])",
    description: "Marks each packet's network header as starting OFFSET bytes into \
        the data, so that elements which work on the IP header (DecIPTTL, \
        IPGWOptions, ICMPError, ...) find it. Nothing is checked: use CheckIPHeader \
        on packets from an untrusted link, which sets the same annotation after RFC \
        1812 section 5.2.2's checks.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "OFFSET",
        ty: "unsigned integer",
        default: Some("0"),
        doc: "where the IP header starts in the packet data",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> MarkIPHeader(14) -> Discard;",
    see_also: &["CheckIPHeader", "Strip"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(MarkIPHeader {
        offset: args.read_p("OFFSET")?.unwrap_or(0),
    }))
}

/// Sets the network header annotation.
#[derive(Debug)]
pub struct MarkIPHeader {
    offset: usize,
}

impl MarkIPHeader {
    #[inline]
    fn mark(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            p.set_network_header(self.offset);
        }
    }
}

impl Element for MarkIPHeader {
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
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    #[test]
    fn marks_the_header() {
        let mut frame = vec![0u8; 14];
        frame.extend([0x45; 20]);
        let mut h = Harness::push(&CLASS, "14", 1, 1);
        h.push_bytes(0, &frame);
        let out = h.take(0);
        assert_eq!(out[0].network_header_offset(), Some(14));
        assert_eq!(out[0].network_header().unwrap(), &[0x45; 20]);

        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &frame);
        assert_eq!(h.take(0)[0].network_header_offset(), Some(0));
    }

    #[test]
    fn pull_marks_too() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "OFFSET 2", ports);
        h.feed(0, [Packet::from_slice(&[0; 30]).unwrap()]);
        let out = h.pull(0, 8);
        assert_eq!(out[0].network_header_offset(), Some(2));
    }
}
