//! `StripIPHeader`: removes the outermost IPv4 header, located by the
//! network header annotation (Click's `elements/ip/stripipheader.cc`): the
//! decapsulating end of an IP-in-IP tunnel (RFC 2003) or of IPEncap.
//!
//! Only the frame start moves; the annotations stay, so the network header
//! annotation still points at the removed header, as in Click. A
//! CheckIPHeader or MarkIPHeader after it marks the inner header.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `StripIPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StripIPHeader",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "strips the outermost IP header",
    synopsis: "StripIPHeader",
    description: "Removes everything up to the end of the IPv4 header that the network \
        header annotation points at (set by CheckIPHeader, MarkIPHeader or IPEncap; without \
        it the header is taken to start the packet): the header's own length (IHL) says where \
        it ends, options included. The annotations are not changed, so the network header \
        annotation still points at the removed header; follow StripIPHeader with \
        CheckIPHeader or MarkIPHeader to mark the inner one. A packet whose header the \
        annotation does not locate inside it (stripped already), or whose IHL is below 5 or \
        runs past its end, is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[(
        "bad_header",
        "packets without a whole IPv4 header where the annotation points, dropped",
    )],
    example: "InfiniteSource(DATA \\<45 00 00 28 00 00 00 00 40 04 66 d0 0a 00 00 01 0a 00 00 02 \
        45 00 00 14 00 00 00 00 40 11 66 d3 0a 00 00 03 0a 00 00 04>, LIMIT 1) \
        -> CheckIPHeader -> StripIPHeader -> CheckIPHeader -> Discard;",
    see_also: &["IPEncap", "CheckIPHeader", "MarkIPHeader", "Strip"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(StripIPHeader { bad_header: 0 }))
}

/// Strips the IP header.
#[derive(Debug)]
pub struct StripIPHeader {
    bad_header: u64,
}

/// Where the payload after `p`'s IP header starts, in the frame.
#[inline(always)]
fn payload_offset(p: &Packet) -> Option<usize> {
    let at = match p.anno().l3_offset() {
        Some(_) => p.network_header_offset()?,
        None => 0,
    };
    let hlen = usize::from(p.data().get(at)? & 0x0f) * 4;
    let end = at + hlen;
    (hlen >= 20 && end <= p.len()).then_some(end)
}

impl StripIPHeader {
    #[inline]
    fn strip(&mut self, batch: &mut Batch) {
        let mut bad = 0u64;
        batch.retain(|p| match payload_offset(p) {
            Some(end) => {
                p.pull_front(end);
                true
            }
            None => {
                bad += 1;
                false
            }
        });
        self.bad_header += bad;
    }
}

impl Element for StripIPHeader {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.strip(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.strip(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("bad_header", self.bad_header);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{udp, udp_with_options};
    use crate::ip::ipencap;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn strips_to_the_payload_keeping_annotations() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let ip = udp(6);
        let mut frame = vec![0u8; 14];
        frame.extend(&ip);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let l3 = p.anno().l3_offset();
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out[0].data(), &ip[20..]);
        assert_eq!(out[0].anno().l3_offset(), l3);
        // Without an annotation the header starts the packet.
        h.push_bytes(0, &ip);
        assert_eq!(h.take_bytes(0)[0], ip[20..].to_vec());
    }

    #[test]
    fn options_are_stripped_too() {
        let ip = udp_with_options(&[1, 1, 1, 0]);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &ip);
        assert_eq!(h.take_bytes(0)[0], ip[24..].to_vec());
    }

    #[test]
    fn ipencap_then_strip_round_trips() {
        let mut enc = Harness::push(&ipencap::CLASS, "ipip, 192.0.2.1, 192.0.2.2", 1, 1);
        let mut strip = Harness::push(&CLASS, "", 1, 1);
        let inner = udp(30);
        enc.push_bytes(0, &inner);
        strip.push_packets(0, enc.take(0));
        assert_eq!(strip.take_bytes(0)[0], inner);
    }

    #[test]
    fn bad_headers_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let ip = udp(6);
        h.push_bytes(0, &[]);
        h.push_bytes(0, &ip[..19]);
        let mut short_ihl = ip.clone();
        short_ihl[0] = 0x44;
        h.push_bytes(0, &short_ihl);
        // The annotation points at bytes stripped already.
        let mut p = Packet::from_slice(&ip).unwrap();
        p.set_network_header(0);
        p.pull_front(20);
        h.push_packets(0, [p]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("bad_header"), Some(4));
        // A bare 20-byte header leaves an empty packet.
        h.push_bytes(0, &ip[..20]);
        assert_eq!(h.take_bytes(0), vec![Vec::<u8>::new()]);
    }

    #[test]
    fn pull_path_and_no_arguments() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "", ports);
        h.feed(0, [Packet::from_slice(&udp(1)).unwrap()]);
        assert_eq!(h.pull(0, 4)[0].len(), 9);
        assert!(make_element(&CLASS, "20", &PortInfo::default()).is_err());
    }
}
