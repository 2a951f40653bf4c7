//! `IncrementSeqNo`: writes a 32-bit sequence number into each packet at
//! an offset, one more for each packet (Click's
//! `elements/grid/incseqno.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The `IncrementSeqNo` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IncrementSeqNo",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores a sequence number in packets",
    synopsis: "IncrementSeqNo([OFFSET, FIRST, NET_BYTE_ORDER])",
    description: "Writes a 32-bit sequence number into each packet, OFFSET bytes from its \
        start, and counts it up by one for the next packet (wrapping after 2^32 - 1). The \
        number is written in network byte order with NET_BYTE_ORDER, else in the host's \
        (little-endian on x86 and most ARM, as Click writes it there). A packet too short \
        to hold the number at OFFSET passes unchanged and takes no number (Click prints a \
        message for each; bricks counts them). The `seq` handler reads the next number and \
        writes a new one. One counter serves every worker's copy of the element, so \
        packets get distinct numbers whichever core handles them.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned",
            default: Some("0"),
            doc: "where the number goes",
        },
        Keyword {
            name: "FIRST",
            ty: "unsigned (32-bit)",
            default: Some("0"),
            doc: "the first number",
        },
        Keyword {
            name: "NET_BYTE_ORDER",
            ty: "boolean",
            default: Some("false"),
            doc: "write in network byte order",
        },
    ],
    counters: &[("too_short", "packets too short to take a number")],
    example: "InfiniteSource(LIMIT 3, LENGTH 8) -> IncrementSeqNo(OFFSET 4, FIRST 7, \
        NET_BYTE_ORDER true) -> Print(CONTENTS hex) -> Discard;",
    see_also: &["StoreData", "InfiniteSource"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: u32 = args.read("OFFSET")?.unwrap_or(0);
    let first: u32 = args.read("FIRST")?.unwrap_or(0);
    let net = args.read("NET_BYTE_ORDER")?.unwrap_or(false);
    let next = args.shared(|_| Ok(AtomicU32::new(first)))?;
    Ok(Box::new(IncrementSeqNo {
        offset: offset as usize,
        net,
        next,
        too_short: 0,
    }))
}

/// Numbers packets.
#[derive(Debug)]
pub struct IncrementSeqNo {
    offset: usize,
    net: bool,
    /// The next number, shared by every worker's instance.
    next: Arc<AtomicU32>,
    too_short: u64,
}

impl IncrementSeqNo {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let end = self.offset.saturating_add(4);
        let fits = b.iter().filter(|p| p.len() >= end).count();
        if fits < b.len() {
            self.too_short += (b.len() - fits) as u64;
        }
        if fits == 0 {
            return;
        }
        // One atomic add for the batch's numbers (a batch holds at most
        // 256 packets).
        let mut seq = self.next.fetch_add(fits as u32, Ordering::Relaxed);
        for p in b.iter_mut() {
            if let Some(field) = p.data_mut().get_mut(self.offset..end) {
                let bytes = if self.net {
                    seq.to_be_bytes()
                } else {
                    seq.to_ne_bytes()
                };
                field.copy_from_slice(&bytes);
                seq = seq.wrapping_add(1);
            }
        }
    }
}

impl Element for IncrementSeqNo {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("too_short", self.too_short);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "seq").then(|| self.next.load(Ordering::Relaxed).to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "seq" => {
                let v = u32::from_arg(value.trim()).map_err(|_| "seq must be unsigned")?;
                self.next.store(v, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (IncrementSeqNo has `seq`)"
            )),
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "seq"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("seq")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn numbers_in_network_order() {
        let mut h = Harness::push(
            &CLASS,
            "OFFSET 2, FIRST 0xfffffffe, NET_BYTE_ORDER true",
            1,
            1,
        );
        for _ in 0..3 {
            h.push_bytes(0, &[0xaa; 8]);
        }
        let out = h.take_bytes(0);
        assert_eq!(out[0], [0xaa, 0xaa, 0xff, 0xff, 0xff, 0xfe, 0xaa, 0xaa]);
        assert_eq!(out[1], [0xaa, 0xaa, 0xff, 0xff, 0xff, 0xff, 0xaa, 0xaa]);
        assert_eq!(out[2], [0xaa, 0xaa, 0, 0, 0, 0, 0xaa, 0xaa]);
        assert_eq!(h.read_handler("seq").unwrap(), "1");
    }

    #[test]
    fn host_order_and_short_packets() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let p = |n: usize| bricks_element::Packet::from_slice(&vec![0; n]).unwrap();
        h.push_packets(0, [p(4), p(3), p(0), p(5)]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 4);
        assert_eq!(out[0], 0u32.to_ne_bytes());
        assert_eq!(out[1], [0, 0, 0]);
        assert_eq!(out[3][..4], 1u32.to_ne_bytes());
        assert_eq!(h.stats().get("too_short"), Some(2));
        h.write_handler("seq", "100").unwrap();
        h.push_packets(0, [p(4)]);
        assert_eq!(h.take_bytes(0)[0], 100u32.to_ne_bytes());
        assert!(h.write_handler("seq", "-1").is_err());
    }

    #[test]
    fn arguments_are_keywords() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("4").is_err());
        assert!(m("FIRST 4294967296").is_err());
        assert!(m("OFFSET 10, FIRST 3").is_ok());
    }
}
