//! `MPLSSwap`: replaces the top MPLS label of Ethernet frames and
//! decrements its TTL (RFC 3032 section 2.4.1): a label-switching hop
//! between virtual routers. bricks' own element; Click has none.
//!
//! Per packet: one bounds check, one compare and a 4-byte write; expired
//! entries go to output 1 as DecIPTTL's expired datagrams do.

use super::mpls_push::Label;
use super::{be16_at, is_mpls, payload_type_at};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `MPLSSwap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MPLSSwap",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "swaps the top MPLS label of Ethernet frames and decrements its TTL",
    synopsis: "MPLSSwap(LABEL)",
    description: "Expects MPLS-labelled Ethernet frames (type 0x8847 or 0x8848, behind up to \
        two VLAN tags). The top label stack entry gets label LABEL and a TTL one lower; its \
        traffic class and bottom-of-stack bit stay. An entry whose TTL is 0 or 1 must not be \
        forwarded (RFC 3032 section 2.4.1): the frame leaves unchanged on output 1, or is \
        dropped if output 1 is unconnected, and is counted. Frames that carry no label or end \
        inside their header, their tags or the top entry are dropped and counted. The write \
        handler `label` changes LABEL while the router runs.",
    ports: "one input; output 0 swapped frames (agnostic); optional output 1 frames whose \
        label TTL expired (push)",
    keywords: &[Keyword {
        name: "LABEL",
        ty: "integer 0 to 1048575",
        default: None,
        doc: "the outgoing label",
    }],
    counters: &[
        (
            "expired",
            "frames whose label TTL was 0 or 1 (to output 1 or dropped)",
        ),
        ("not_mpls", "frames whose type is not MPLS, dropped"),
        (
            "truncated",
            "frames ending inside their header, a tag or the top entry, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 dd ff \
        45 c0 00 14 00 03 00 00 ff 06 a4 e8 0a 01 02 01 0a 22 00 01>, LIMIT 1) \
        -> sw :: MPLSSwap(300) -> Discard; sw[1] -> Discard;",
    see_also: &["MPLSPush", "MPLSPop", "DecIPTTL", "VRDemux"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let label: Label = args.read_mp("LABEL")?;
    Ok(Box::new(MPLSSwap {
        label: label.0,
        has_expired_output: ports.noutputs() > 1,
        expired: 0,
        not_mpls: 0,
        truncated: 0,
    }))
}

/// Swaps the top label.
#[derive(Debug)]
pub struct MPLSSwap {
    label: u32,
    has_expired_output: bool,
    expired: u64,
    not_mpls: u64,
    truncated: u64,
}

impl MPLSSwap {
    #[inline(always)]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        let d = p.data_mut();
        let Some(at) = payload_type_at(d, 2) else {
            self.truncated += 1;
            return None;
        };
        if !is_mpls(be16_at(d, at).unwrap_or(0)) {
            self.not_mpls += 1;
            return None;
        }
        let Some(e) = d.get_mut(at + 2..at + 6) else {
            self.truncated += 1;
            return None;
        };
        let entry = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
        let ttl = entry & 0xff;
        if ttl <= 1 {
            self.expired += 1;
            return self.has_expired_output.then_some(1);
        }
        // Traffic class and bottom of stack (bits 8 to 11) stay.
        let swapped = self.label << 12 | (entry & 0xf00) | (ttl - 1);
        e.copy_from_slice(&swapped.to_be_bytes());
        Some(0)
    }
}

impl Element for MPLSSwap {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("expired", self.expired);
        s.counter("not_mpls", self.not_mpls);
        s.counter("truncated", self.truncated);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "label" => {
                self.label = Label::from_arg(value.trim())?.0;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (MPLSSwap has `label`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{labelled, tagged, IPV4_UDP, MPLS_TCP};
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn swaps_a_real_capture() {
        let mut h = Harness::push(&CLASS, "300", 1, 2);
        h.push_bytes(0, &MPLS_TCP);
        // Label 29 -> 300, TC 6 and bottom of stack kept, TTL 255 -> 254.
        let mut want = MPLS_TCP.to_vec();
        want[14..18].copy_from_slice(&(300u32 << 12 | 6 << 9 | 1 << 8 | 254).to_be_bytes());
        assert_eq!(h.take_bytes(0), vec![want]);
        assert!(h.take(1).is_empty());
    }

    #[test]
    fn swaps_the_top_of_a_stack_behind_a_tag() {
        let f = tagged(
            &labelled(&IPV4_UDP, &[(30, 1, 9), (40, 2, 8)]),
            &[(0x8100, 5)],
        );
        let mut h = Harness::push(&CLASS, "LABEL 31", 1, 1);
        h.push_bytes(0, &f);
        let want = tagged(
            &labelled(&IPV4_UDP, &[(31, 1, 8), (40, 2, 8)]),
            &[(0x8100, 5)],
        );
        assert_eq!(h.take_bytes(0)[0], want);
    }

    #[test]
    fn expired_ttl_goes_to_output_1_unchanged() {
        let mut h = Harness::push(&CLASS, "300", 1, 2);
        let one = labelled(&IPV4_UDP, &[(30, 0, 1)]);
        let zero = labelled(&IPV4_UDP, &[(30, 0, 0)]);
        let two = labelled(&IPV4_UDP, &[(30, 0, 2)]);
        h.push_bytes(0, &one);
        h.push_packets(0, [&zero, &two].map(|f| Packet::from_slice(f).unwrap()));
        assert_eq!(h.take_bytes(1), vec![one, zero]);
        assert_eq!(h.take_bytes(0), vec![labelled(&IPV4_UDP, &[(300, 0, 1)])]);
        assert_eq!(h.stats().get("expired"), Some(2));
        // Without output 1 they are dropped, and still counted.
        let mut h = Harness::push(&CLASS, "300", 1, 1);
        h.push_bytes(0, &labelled(&IPV4_UDP, &[(30, 0, 1)]));
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("expired"), Some(1));
    }

    #[test]
    fn malformed_frames_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "300", 1, 2);
        let f = labelled(&IPV4_UDP, &[(30, 0, 9)]);
        for len in [0, 13, 14, 17] {
            h.push_bytes(0, &f[..len]);
        }
        h.push_bytes(0, &IPV4_UDP);
        assert!(h.take(0).is_empty() && h.take(1).is_empty());
        assert_eq!(h.stats().get("truncated"), Some(4));
        assert_eq!(h.stats().get("not_mpls"), Some(1));
    }

    #[test]
    fn pull_path_and_handler() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "300", ports);
        h.write_handler("label", "301").unwrap();
        assert!(h.write_handler("label", "1048576").is_err());
        h.feed(
            0,
            [Packet::from_slice(&labelled(&IPV4_UDP, &[(30, 0, 9)])).unwrap()],
        );
        let got = h.pull(0, 8);
        assert_eq!(got[0].data(), &labelled(&IPV4_UDP, &[(301, 0, 8)])[..]);
    }

    #[test]
    fn arguments_are_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(make("").unwrap_err().contains("LABEL"));
        assert!(make("-1").unwrap_err().contains("LABEL"));
        assert!(make("1, 2").is_err());
    }
}
