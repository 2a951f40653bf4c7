//! `MarkMACHeader`: marks where the link header is, and so where the
//! network header starts (Click's `elements/standard/markmacheader.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};

/// The `MarkMACHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MarkMACHeader",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "marks the link-layer header and the network header after it",
    synopsis: "MarkMACHeader([OFFSET, LENGTH])",
    description: "Marks the link-layer header as starting OFFSET bytes into the packet \
        and LENGTH bytes long, which in Click also places the network header just after \
        it. bricks keeps no link-header annotation (a frame's first byte is its link \
        header), so the element sets the network-header annotation to OFFSET + LENGTH, \
        which is what the elements after it read (CheckIPHeader, IPPrint, ...). A packet \
        shorter than that is passed on; elements that read its network header find it \
        empty and drop it.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned",
            default: Some("0"),
            doc: "where the link header starts; positional",
        },
        Keyword {
            name: "LENGTH",
            ty: "unsigned",
            default: Some("14"),
            doc: "link header length (Ethernet); positional",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> MarkMACHeader -> Discard;",
    see_also: &["Strip", "CheckIPHeader"],
};

/// Largest OFFSET + LENGTH: the frame must fit a buffer anyway.
const MAX_END: usize = 16384;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: usize = args.read_p("OFFSET")?.unwrap_or(0);
    let length: usize = args.read_p("LENGTH")?.unwrap_or(14);
    let end = offset.saturating_add(length);
    if end > MAX_END {
        return Err(ArgError::new(format!(
            "OFFSET + LENGTH is {end}; at most {MAX_END}"
        )));
    }
    Ok(Box::new(MarkMACHeader { end }))
}

/// Sets the network-header annotation after the link header.
#[derive(Debug)]
pub struct MarkMACHeader {
    /// OFFSET + LENGTH.
    end: usize,
}

impl MarkMACHeader {
    #[inline]
    fn mark(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            p.set_network_header(self.end);
        }
    }
}

impl Element for MarkMACHeader {
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
    use bricks_runtime::testing::{make_element, Harness};

    /// An Ethernet frame with a 20-byte IPv4 header (no payload).
    fn frame() -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f
    }

    #[test]
    fn network_header_follows_ethernet() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &frame());
        let p = h.take(0);
        assert_eq!(p[0].network_header_offset(), Some(14));
        assert_eq!(p[0].network_header().unwrap()[0], 0x45);
    }

    #[test]
    fn offset_and_length() {
        let mut h = Harness::push(&CLASS, "OFFSET 2, LENGTH 12", 1, 1);
        h.push_bytes(0, &frame());
        assert_eq!(h.take(0)[0].network_header_offset(), Some(14));
    }

    #[test]
    fn short_packet_passes_with_an_empty_header() {
        let mut h = Harness::push(&CLASS, "0, 14", 1, 1);
        h.push_bytes(0, &[0x02, 0, 0]);
        let p = h.take(0);
        assert_eq!(p[0].network_header(), Some(&[][..]));
        assert!(make_element(&CLASS, "0, 100000", &Default::default()).is_err());
    }
}
