//! `DecIP6HLIM`: the hop limit decrement every forwarded IPv6 packet gets
//! (RFC 8200 section 3). IPv6 has no header checksum, so the work per
//! packet is one bounds check, one compare and one byte write.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `DecIP6HLIM` class.
pub static CLASS: ElementClass = ElementClass {
    name: "DecIP6HLIM",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "decrements the IPv6 hop limit, sending expired packets to output 1",
    synopsis: "DecIP6HLIM",
    description: "Expects IPv6 packets, with the network header annotation set or the \
        header at the start of the data. A packet whose hop limit is 0 or 1 must not be \
        forwarded (RFC 8200 section 3; RFC 4443 section 3.3): it leaves unchanged on \
        output 1, usually connected to ICMP6Error(..., timeexceeded, hoplimit), or is \
        dropped if output 1 is unconnected. Other packets have their hop limit \
        decreased by one and leave on output 0; there is no checksum to update. A \
        packet shorter than an IPv6 header is dropped and counted. The work is done a \
        batch at a time, without allocating.",
    ports: "one input; output 0 forwarded packets (agnostic); optional output 1 \
        expired packets (push)",
    keywords: &[],
    counters: &[
        (
            "drops",
            "packets with hop limit 0 or 1 (sent to output 1 or dropped); Click's handler",
        ),
        ("truncated", "packets shorter than an IPv6 header, dropped"),
    ],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 00 3b 01 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02>, \
        LIMIT 1) -> dh :: DecIP6HLIM -> Discard; \
        dh[1] -> ICMP6Error(2001:db8::ff, timeexceeded, hoplimit) -> Discard;",
    see_also: &["ICMP6Error", "CheckIP6Header"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(DecIP6HLIM {
        has_reject: ports.noutputs() > 1,
        expired: 0,
        truncated: 0,
    }))
}

/// Decrements the hop limit.
#[derive(Debug)]
pub struct DecIP6HLIM {
    has_reject: bool,
    expired: u64,
    truncated: u64,
}

impl DecIP6HLIM {
    #[inline(always)]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        let Some(h) = p.l3_chunk_mut::<40>() else {
            self.truncated += 1;
            return None;
        };
        if h[7] <= 1 {
            self.expired += 1;
            return self.has_reject.then_some(1);
        }
        h[7] -= 1;
        Some(0)
    }

    /// The usual packet: decremented, bound for output 0; any other is
    /// left as it was, for [`DecIP6HLIM::verdict`].
    #[inline(always)]
    fn usual(p: &mut Packet) -> bool {
        match p.l3_chunk_mut::<40>() {
            Some(h) if h[7] > 1 => {
                h[7] -= 1;
                true
            }
            _ => false,
        }
    }
}

impl Element for DecIP6HLIM {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_usual(batch, DecIP6HLIM::usual, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.expired);
        s.counter("truncated", self.truncated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::ECHO_REQUEST;
    use bricks_runtime::testing::Harness;

    fn with_hlim(hlim: u8) -> Vec<u8> {
        let mut p = ECHO_REQUEST.to_vec();
        p[7] = hlim;
        p
    }

    #[test]
    fn decrements_and_changes_nothing_else() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &with_hlim(64));
        assert_eq!(h.take_bytes(0), vec![with_hlim(63)]);
        h.push_bytes(0, &with_hlim(2));
        assert_eq!(h.take_bytes(0), vec![with_hlim(1)]);
        h.push_bytes(0, &with_hlim(255));
        assert_eq!(h.take_bytes(0), vec![with_hlim(254)]);
    }

    #[test]
    fn network_header_annotation_is_followed() {
        let mut frame = vec![0xee; 14];
        frame.extend(with_hlim(9));
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_packets(0, [p]);
        let out = h.take_bytes(0);
        assert_eq!(out[0][14 + 7], 8);
        assert_eq!(&out[0][..14], &[0xee; 14]);
    }

    #[test]
    fn hop_limit_one_and_zero_go_to_output_1_unchanged() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        for hlim in [1, 0] {
            h.push_bytes(0, &with_hlim(hlim));
            assert!(h.take(0).is_empty());
            assert_eq!(h.take_bytes(1), vec![with_hlim(hlim)]);
        }
        assert_eq!(h.stats().get("drops"), Some(2));
    }

    #[test]
    fn a_mixed_batch_is_split_in_order() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let ps: Vec<Packet> = [5, 1, 7, 0, 3]
            .iter()
            .map(|&l| Packet::from_slice(&with_hlim(l)).unwrap())
            .collect();
        h.push_packets(0, ps);
        let fwd: Vec<u8> = h.take_bytes(0).iter().map(|p| p[7]).collect();
        assert_eq!(fwd, [4, 6, 2]);
        let exp: Vec<u8> = h.take_bytes(1).iter().map(|p| p[7]).collect();
        assert_eq!(exp, [1, 0]);
    }

    #[test]
    fn expired_dropped_without_output_1_and_truncated_dropped() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &with_hlim(1));
        h.push_bytes(0, &ECHO_REQUEST[..39]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
        assert_eq!(h.stats().get("truncated"), Some(1));
    }
}
