//! `UnstripIPHeader`: restores an IP header that StripIPHeader removed
//! (Click's `elements/ip/unstripipheader.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo,
};

/// The `UnstripIPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "UnstripIPHeader",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "restores the IP header in front of a packet",
    synopsis: "UnstripIPHeader",
    description: "Puts back the IP header that StripIPHeader (or Strip) removed: when the \
        network header annotation points in front of the packet, the packet grows back to \
        start there; the header bytes are still in the buffer. A packet whose header is \
        not in front of it, or that has no annotation, passes unchanged (Click asserts \
        that the annotation is set).",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 00 00 00 40 11 66 cb 0a 00 00 03 0a 00 00 04 \
        00 01 00 02 00 08 00 00>, LIMIT 1) \
        -> CheckIPHeader -> StripIPHeader -> UnstripIPHeader -> CheckIPHeader -> Discard;",
    see_also: &["StripIPHeader", "StripToNetworkHeader", "Unstrip"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(UnstripIPHeader))
}

/// Restores the IP header.
#[derive(Debug)]
pub struct UnstripIPHeader;

#[inline(always)]
fn unstrip(p: &mut Packet) {
    if let Some(l3) = p.anno().l3_offset() {
        let l3 = usize::from(l3);
        if l3 < p.head_offset() {
            let _ = p.set_head_offset(l3);
        }
    }
}

impl Element for UnstripIPHeader {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        batch.iter_mut().for_each(unstrip);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| b.iter_mut().for_each(unstrip));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use crate::ip::stripipheader;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn undoes_stripipheader() {
        let ip = udp(6);
        let mut s = Harness::push(&stripipheader::CLASS, "", 1, 1);
        let mut u = Harness::push(&CLASS, "", 1, 1);
        let mut p = Packet::from_slice(&ip).unwrap();
        p.set_network_header(0);
        s.push_packets(0, [p]);
        let stripped = s.take(0);
        assert_eq!(stripped[0].data(), &ip[20..]);
        u.push_packets(0, stripped);
        assert_eq!(u.take_bytes(0), vec![ip]);
    }

    #[test]
    fn header_in_the_packet_or_no_annotation_unchanged() {
        let mut frame = vec![0xaa; 14];
        frame.extend(udp(2));
        let mut u = Harness::push(&CLASS, "", 1, 1);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        u.push_packets(0, [p]);
        u.push_bytes(0, &frame);
        assert_eq!(u.take_bytes(0), vec![frame.clone(), frame]);
        assert!(make_element(&CLASS, "x", &PortInfo::default()).is_err());
    }
}
