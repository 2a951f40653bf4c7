//! `Strip` and `Unstrip`: remove or restore bytes at the front of packets.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo, Stats,
};

/// The `Strip` class.
pub static STRIP: ElementClass = ElementClass {
    name: "Strip",
    ports: "1/1",
    processing: "a/a",
    manual: &STRIP_MANUAL,
    make: make_strip,
};

/// The `Unstrip` class.
pub static UNSTRIP: ElementClass = ElementClass {
    name: "Unstrip",
    ports: "1/1",
    processing: "a/a",
    manual: &UNSTRIP_MANUAL,
    make: make_unstrip,
};

static STRIP_MANUAL: Manual = Manual {
    summary: "removes bytes from the front of packets",
    synopsis: "Strip(LENGTH)",
    description: "Removes LENGTH bytes from the front of each packet, typically an \
        Ethernet header before IP processing. The bytes stay in the buffer's headroom, \
        so a later Unstrip or EtherEncap reuses them without copying. A packet shorter \
        than LENGTH becomes empty.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> Discard;",
    see_also: &["Unstrip", "EtherEncap"],
};

static UNSTRIP_MANUAL: Manual = Manual {
    summary: "restores bytes at the front of packets",
    synopsis: "Unstrip(LENGTH)",
    description: "Puts LENGTH bytes back at the front of each packet, undoing a Strip: \
        the bytes that were there are still in the buffer. A packet without LENGTH bytes \
        of headroom is dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets without enough headroom")],
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> Unstrip(14) -> Discard;",
    see_also: &["Strip"],
};

fn make_strip(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let len: usize = args.read_mp("LENGTH")?;
    Ok(Box::new(Strip { len }))
}

fn make_unstrip(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let len: usize = args.read_mp("LENGTH")?;
    Ok(Box::new(Unstrip { len, drops: 0 }))
}

/// Removes bytes from the front.
#[derive(Debug)]
pub struct Strip {
    len: usize,
}

impl Element for Strip {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        for p in batch.iter_mut() {
            p.pull_front(self.len);
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| {
            for p in b.iter_mut() {
                p.pull_front(self.len);
            }
        });
    }
}

/// Restores bytes at the front.
#[derive(Debug)]
pub struct Unstrip {
    len: usize,
    drops: u64,
}

impl Unstrip {
    fn apply(&mut self, b: &mut Batch) {
        let len = self.len;
        let mut drops = 0;
        b.retain(|p| {
            let ok = p.push_front(len).is_ok();
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for Unstrip {
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
    fn strip_then_unstrip_restores_bytes() {
        let frame: Vec<u8> = (0..40).collect();
        let mut s = Harness::push(&STRIP, "14", 1, 1);
        s.push_bytes(0, &frame);
        let out = s.take(0);
        assert_eq!(out[0].data(), &frame[14..]);
        let mut u = Harness::push(&UNSTRIP, "14", 1, 1);
        u.push_packets(0, out);
        assert_eq!(u.take_bytes(0), vec![frame]);
    }

    #[test]
    fn strip_more_than_length_empties() {
        let mut s = Harness::push(&STRIP, "LENGTH 100", 1, 1);
        s.push_bytes(0, &[1; 10]);
        assert!(s.take(0)[0].is_empty());
    }

    #[test]
    fn unstrip_without_headroom_drops() {
        let mut u = Harness::push(&UNSTRIP, "1000", 1, 1);
        u.push_bytes(0, &[1; 10]);
        assert!(u.take(0).is_empty());
        assert_eq!(u.stats().get("drops"), Some(1));
    }

    #[test]
    fn length_is_mandatory() {
        let e = bricks_runtime::testing::make_element(&STRIP, "", &Default::default());
        assert!(e.unwrap_err().contains("missing mandatory argument LENGTH"));
    }
}
