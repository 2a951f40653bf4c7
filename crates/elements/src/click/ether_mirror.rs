//! `EtherMirror`: swaps the Ethernet source and destination addresses, as
//! Click's `elements/ethernet/ethermirror.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo, Stats,
};

/// The `EtherMirror` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherMirror",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "swaps Ethernet source and destination",
    synopsis: "EtherMirror()",
    description: "Swaps the source and destination addresses of each Ethernet frame. A \
        packet shorter than an Ethernet header (14 bytes) is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets shorter than an Ethernet header")],
    example: "InfiniteSource(LENGTH 60, LIMIT 1) -> EtherMirror -> Print -> Discard;",
    see_also: &["EtherEncap", "EtherRewrite", "ICMPPingResponder"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(EtherMirror { drops: 0 }))
}

/// Swaps Ethernet addresses.
#[derive(Debug)]
pub struct EtherMirror {
    drops: u64,
}

impl EtherMirror {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let mut drops = 0;
        b.retain(|p| {
            let ok = p.len() >= 14;
            if ok {
                let (dst, rest) = p.data_mut().split_at_mut(6);
                dst.swap_with_slice(&mut rest[..6]);
            }
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for EtherMirror {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn swaps_addresses_of_an_arp_reply() {
        // 10.0.0.2 (52:54:00:bb:00:02) answers 10.0.0.1 (52:54:00:aa:00:01).
        let reply: [u8; 42] = [
            0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02, 0x08, 0x06,
            0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02,
            0x0a, 0x00, 0x00, 0x02, 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01,
        ];
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &reply);
        h.push_bytes(0, &reply[..13]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0][..6], &reply[6..12]);
        assert_eq!(&out[0][6..12], &reply[..6]);
        assert_eq!(&out[0][12..], &reply[12..]);
        assert_eq!(h.stats().get("drops"), Some(1));
    }
}
