//! `StripToNetworkHeader`: moves the packet's start to its network header
//! (Click's `elements/standard/striptonet.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo,
};

/// The `StripToNetworkHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StripToNetworkHeader",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "strips everything preceding the network header",
    synopsis: "StripToNetworkHeader",
    description: "Makes each packet start at the network header that the network header \
        annotation points at (set by CheckIPHeader, MarkIPHeader or IPEncap): bytes in \
        front of it, such as a link-level header, are removed and stay in the headroom. \
        If the header was stripped already (it lies in front of the packet), the packet \
        grows back to start there, as in Click. A packet without the annotation passes \
        unchanged (Click leaves this undefined); one whose annotation points past its end \
        becomes empty.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(DATA \\<00 00 00 00 00 01 00 00 00 00 00 02 08 00 \
        45 00 00 14 00 00 00 00 40 11 66 d3 0a 00 00 03 0a 00 00 04>, LIMIT 1) \
        -> MarkIPHeader(14) -> StripToNetworkHeader -> CheckIPHeader -> Discard;",
    see_also: &["MarkIPHeader", "UnstripIPHeader", "Strip"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(StripToNetworkHeader))
}

/// Strips to the network header.
#[derive(Debug)]
pub struct StripToNetworkHeader;

#[inline(always)]
fn strip(p: &mut Packet) {
    let Some(l3) = p.anno().l3_offset() else {
        return;
    };
    let l3 = usize::from(l3);
    let head = p.head_offset();
    if l3 >= head {
        p.pull_front(l3 - head);
    } else {
        // In front of the frame: the bytes are still in the buffer.
        let _ = p.set_head_offset(l3);
    }
}

impl Element for StripToNetworkHeader {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        batch.iter_mut().for_each(strip);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| b.iter_mut().for_each(strip));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// An Ethernet frame carrying a 20-byte UDP-less IPv4 header.
    fn frame() -> Vec<u8> {
        let mut f = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 0x14, 0, 0, 0, 0, 0x40, 0x11, 0x66, 0xd3, 10, 0, 0, 3, 10, 0, 0, 4,
        ]);
        f
    }

    #[test]
    fn strips_the_link_header() {
        let f = frame();
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut p = Packet::from_slice(&f).unwrap();
        p.set_network_header(14);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out[0].data(), &f[14..]);
        assert_eq!(out[0].network_header_offset(), Some(0));
    }

    #[test]
    fn grows_back_to_a_stripped_header() {
        let f = frame();
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut p = Packet::from_slice(&f).unwrap();
        p.set_network_header(14);
        p.pull_front(34);
        assert!(p.is_empty());
        h.push_packets(0, [p]);
        assert_eq!(h.take_bytes(0), vec![f[14..].to_vec()]);
    }

    #[test]
    fn without_annotation_unchanged_and_past_end_empty() {
        let f = frame();
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &f);
        assert_eq!(h.take_bytes(0), vec![f.clone()]);
        let mut p = Packet::from_slice(&f).unwrap();
        p.set_network_header(14);
        p.take_back(30);
        h.push_packets(0, [p]);
        assert_eq!(h.take_bytes(0), vec![Vec::<u8>::new()]);
        assert!(make_element(&CLASS, "1", &PortInfo::default()).is_err());
    }
}
