//! `Pad`: extends packets to at least a length, as Click's
//! `elements/standard/pad.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};

/// The `Pad` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Pad",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "extends packet length",
    synopsis: "Pad([LENGTH, ZERO])",
    description: "Extends packets shorter than LENGTH bytes to LENGTH bytes by adding \
        bytes at the end; longer packets pass unchanged. Without LENGTH (or with 0), adds \
        as many bytes as the packet's extra length annotation says it stands for beyond its \
        data (bytes `Truncate` removed, a trace's IP length past its capture). The extra \
        length annotation is 0 afterwards. Added bytes are always zero (bricks never \
        exposes old buffer contents), so ZERO false changes nothing. A packet the buffer \
        cannot extend is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LENGTH",
            ty: "unsigned",
            default: Some("0"),
            doc: "length packets are extended to; positional",
        },
        Keyword {
            name: "ZERO",
            ty: "boolean",
            default: Some("true"),
            doc: "whether added bytes are zero (they always are in bricks)",
        },
    ],
    counters: &[("drops", "packets that did not fit in a buffer once padded")],
    example: "InfiniteSource(LENGTH 20, LIMIT 1) -> Pad(60) -> Print -> Discard;",
    see_also: &["Truncate", "Resize"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let nbytes: u32 = args.read_p("LENGTH")?.unwrap_or(0);
    let _: Option<bool> = args.read("ZERO")?;
    Ok(Box::new(Pad { nbytes, drops: 0 }))
}

/// Extends short packets.
#[derive(Debug)]
pub struct Pad {
    nbytes: u32,
    drops: u64,
}

impl Pad {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let n = self.nbytes as usize;
        let mut drops = 0;
        b.retain(|p| {
            let put = if n != 0 {
                n.saturating_sub(p.len())
            } else {
                p.anno().extra_length as usize
            };
            let ok = put == 0 || p.put_back(put).is_ok();
            p.anno_mut().extra_length = 0;
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for Pad {
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
    use crate::ip::header::testing::udp;
    use bricks_element::Packet;
    use bricks_runtime::testing::Harness;

    #[test]
    fn pads_short_packets_with_zeros() {
        let frame = udp(6);
        let mut h = Harness::push(&CLASS, "44", 1, 1);
        h.push_bytes(0, &frame);
        h.push_bytes(0, &udp(20));
        let out = h.take_bytes(0);
        assert_eq!(out[0].len(), 44);
        assert_eq!(&out[0][..34], &frame[..]);
        assert!(out[0][34..].iter().all(|&b| b == 0));
        assert_eq!(out[1], udp(20));
    }

    #[test]
    fn without_length_passes_unchanged() {
        let mut h = Harness::push(&CLASS, "ZERO false", 1, 1);
        h.push_bytes(0, &udp(6));
        assert_eq!(h.take_bytes(0), vec![udp(6)]);
    }

    #[test]
    fn without_length_restores_the_extra_length() {
        // Click's test/standard/Pad-01: a 34-byte packet standing for 38.
        for (args, len) in [("", 38), ("44", 44), ("30", 34)] {
            let mut p = Packet::from_slice(&udp(6)).unwrap();
            p.anno_mut().extra_length = 4;
            let mut h = Harness::push(&CLASS, args, 1, 1);
            h.push_packets(0, [p]);
            let out = h.take(0);
            assert_eq!(out[0].len(), len, "Pad({args})");
            assert_eq!(&out[0].data()[..34], &udp(6)[..]);
            assert!(out[0].data()[34..].iter().all(|&b| b == 0));
            assert_eq!(out[0].anno().extra_length, 0);
        }
    }

    #[test]
    fn too_long_for_a_buffer_is_dropped() {
        let mut h = Harness::push(&CLASS, "1000000", 1, 1);
        h.push_bytes(0, &udp(6));
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
    }
}
